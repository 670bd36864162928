#pragma once
// Layer 4: the `sigmoid_gated_add` op's arguments. Kernel signature: void(const SigmoidGatedAddArgs&).
#include "core/tensor.h"

namespace opchain {

// out += sigmoid(gate[t]) * y[t]: Qwen2-MoE's shared expert, scaled by its gate.
struct SigmoidGatedAddArgs {
  Tensor gate;  // f32 [n, 1]
  Tensor y;     // f32 [n, h]
  Tensor out;   // f32 [n, h]
};

}  // namespace opchain
