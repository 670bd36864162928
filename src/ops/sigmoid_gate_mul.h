#pragma once
// Layer 4: the `sigmoid_gate_mul` op's arguments. Kernel signature: void(const SigmoidGateMulArgs&).
#include "core/tensor.h"

namespace opchain {

// x *= sigmoid(gate), elementwise, in place: the output gate of Qwen3-Next / Qwen3.5 full attention,
// applied to the attention output before o_proj.
struct SigmoidGateMulArgs {
  Tensor gate;  // f32 [n, m]
  Tensor x;     // f32 [n, m], updated in place
};

}  // namespace opchain
