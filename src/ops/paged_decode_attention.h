#pragma once
// Layer 4: the `paged_decode_attention` op's arguments. Kernel signature: void(const PagedDecodeAttentionArgs&).
#include "core/tensor.h"
#include "ops/step_metadata.h"

namespace opchain {

// One query token per sequence attending over its whole paged cache (kv_seqlens[b] positions).
struct PagedDecodeAttentionArgs {
  Tensor q;        // f32 [batch, q_heads, d]
  Tensor k_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor v_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor out;      // f32 [batch, q_heads, d]
  float scale = 1.0f;
  const AttnMetadata* meta = nullptr;
};

}  // namespace opchain
