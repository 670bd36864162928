#pragma once
// Layer 4: the `fill_kv_cache` op's arguments. Kernel signature: void(const FillKvCacheArgs&).
#include "core/tensor.h"
#include "ops/step_metadata.h"

namespace opchain {

// Writes each new token's k and v into its cache slot (meta->slot_mapping); slot -1 is skipped.
struct FillKvCacheArgs {
  Tensor k;        // f32 [n, kv_heads, d]
  Tensor v;        // f32 [n, kv_heads, d]
  Tensor k_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor v_cache;  // C [num_blocks, block_size, kv_heads, d]
  const AttnMetadata* meta = nullptr;
};

}  // namespace opchain
