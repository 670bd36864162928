#pragma once
// Layer 4: the `paged_prefill_attention` op's arguments. Kernel signature: void(const PagedPrefillAttentionArgs&).
#include "core/tensor.h"
#include "ops/step_metadata.h"

namespace opchain {

// Causal attention of new tokens over the paged cache (cached context + the new tokens, which
// fill_kv_cache has already written). New token i of a sequence sees kv positions <= kv_len - q_len + i.
struct PagedPrefillAttentionArgs {
  Tensor q;        // f32 [n, q_heads, d]
  Tensor k_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor v_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor out;      // f32 [n, q_heads, d]
  float scale = 1.0f;
  const AttnMetadata* meta = nullptr;
};

}  // namespace opchain
