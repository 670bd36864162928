#pragma once
// Layer 4: the `sigmoid_gate_mul` op's arguments. Kernel signature: void(const SigmoidGateMulArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// x *= sigmoid(gate), elementwise, in place: the output gate of Qwen3-Next / Qwen3.5 full attention,
// applied to the attention output before o_proj.
struct SigmoidGateMulArgs {
  Tensor gate;  // f32 [n, m]
  Tensor x;     // f32 [n, m], updated in place

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = SigmoidGateMulArgs;
    return std::tuple{Field{"gate", Role::In, &A::gate}, Field{"x", Role::InOut, &A::x}};
  }
};

}  // namespace opchain
