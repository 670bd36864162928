#pragma once
// Layer 4: the `prefill_attention` op's arguments. Kernel signature: void(const PrefillAttentionArgs&).
#include "core/tensor.h"
#include "ops/step_metadata.h"

namespace opchain {

// Causal attention of each sequence's new tokens over themselves (no cached context).
// Query head h reads kv head h / (q_heads / kv_heads).
struct PrefillAttentionArgs {
  Tensor q;    // f32 [n, q_heads, d]
  Tensor k;    // f32 [n, kv_heads, d]
  Tensor v;    // f32 [n, kv_heads, d]
  Tensor out;  // f32 [n, q_heads, d]
  float scale = 1.0f;
  const AttnMetadata* meta = nullptr;
};

}  // namespace opchain
