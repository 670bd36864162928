#pragma once
// Layer 4: the `swiglu` op's arguments. Kernel signature: void(const SwigluArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// The MoE step of the activation: out = silu(x[:, :i]) * x[:, i:] on expert-sorted rows.
struct SwigluArgs {
  Tensor x;    // f32 [m, 2i]
  Tensor out;  // f32 [m, i]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = SwigluArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
