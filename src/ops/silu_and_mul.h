#pragma once
// Layer 4: the `silu_and_mul` op's arguments. Kernel signature: void(const SiluAndMulArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// out = silu(x[:, :i]) * x[:, i:], the gated MLP activation.
struct SiluAndMulArgs {
  Tensor x;    // f32 [n, 2i]
  Tensor out;  // f32 [n, i]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = SiluAndMulArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
