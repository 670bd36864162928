#pragma once
// Layer 4: the `sigmoid_gated_add` op's arguments. Kernel signature: void(const SigmoidGatedAddArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// out += sigmoid(gate[t]) * y[t]: Qwen2-MoE's shared expert, scaled by its gate.
struct SigmoidGatedAddArgs {
  Tensor gate;  // f32 [n, 1]
  Tensor y;     // f32 [n, h]
  Tensor out;   // f32 [n, h]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = SigmoidGatedAddArgs;
    return std::tuple{Field{"gate", Role::In, &A::gate}, Field{"y", Role::In, &A::y},
                      Field{"out", Role::InOut, &A::out}};
  }
};

}  // namespace opchain
