#pragma once
// Layer 4: the `apply_rotary_pos_emb` op's arguments. Kernel signature: void(const ApplyRotaryPosEmbArgs&).
#include "core/tensor.h"

namespace opchain {

// Rotate-half RoPE in place: dimension i pairs with i + d/2.
struct ApplyRotaryPosEmbArgs {
  Tensor q;    // f32 [n, q_heads, d]
  Tensor k;    // f32 [n, kv_heads, d]
  Tensor cos;  // f32 [n, d/2]
  Tensor sin;  // f32 [n, d/2]
};

}  // namespace opchain
