#pragma once
// The model's cache: per full-attention layer, the paged KV cache (k and v of [num_blocks, block_size,
// kv_heads, head_dim]) and the allocator of its blocks; per linear-attention layer of a hybrid model,
// the state pool (conv and recurrent state per slot) and the allocator of its slots. Block 0 is
// reserved: padding rows of a graph bucket point at it. State slots have no reserved one: padding
// sequences carry slot -1, which the kernels skip.
//
// Note [State memory]: a sequence of a hybrid model holds one state slot from admission to finish,
// whatever its length: per linear layer (K-1) * conv_dim + nv * dk * dv floats. For Qwen3.5-35B-A3B
// that is 30 layers x 2.2 MB = 66 MB, so the number of slots, not the KV blocks, bounds how many
// sequences run at once; the engine sizes both from one byte budget (EngineConfig::kv_cache_bytes).
//
// Note [KV cache dtype]: the paged K/V cache is f32 when the model runs at f32 matmul precision (the
// reference numerics) and bf16 otherwise, as a bf16 run of the checkpoint caches its keys and values
// in the model's dtype (transformers, and vLLM's kv_cache_dtype "auto"). fill_kv_cache rounds each
// value to nearest even once; attention widens it back exactly, so reference and cpu read the same
// numbers. Half the bytes per cached token: decode at long contexts reads half as much, and a byte
// budget holds twice the tokens. A prompt attends over its cached (rounded) keys and values too, never
// the fresh f32 ones (backends/attention.cpp): a step that prefills a prompt beside a sequence with
// cached context must attend over the cache, and the prompt's bits must not depend on whether such a
// batch-mate is there. vLLM V1's FlashAttention backend also reads every token's keys from the cache.
#include <cstdint>
#include <vector>

#include "io/hf_config.h"
#include "models/causal_lm.h"
#include "ops/matmul_precision.h"

namespace opchain {

class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t num_blocks);
  // Appends n free blocks to `out`; returns false (and takes nothing) when fewer than n are free.
  bool allocate(int64_t n, std::vector<int32_t>& out);
  void free(const std::vector<int32_t>& blocks);
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_total() const { return total_; }  // usable blocks (excludes the reserved one)

 private:
  std::vector<int32_t> free_;
  int64_t total_;
};

// Hands out state slots [0, num_slots).
class SlotAllocator {
 public:
  explicit SlotAllocator(int64_t num_slots);
  // A free slot, or -1 when none is.
  int32_t allocate();
  void free(int32_t slot);
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_total() const { return total_; }

 private:
  std::vector<int32_t> free_;
  int64_t total_;
};

// The K/V cache dtype a model run at matmul precision `p` uses (Note [KV cache dtype]).
DType kv_cache_dtype(MatmulPrecision p);

class KvCache {
 public:
  // num_state_slots matters only for models with linear-attention layers. kv_dtype: f32 or bf16.
  KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size, int64_t num_state_slots = 1,
          DType kv_dtype = DType::F32);
  const std::vector<LayerKvCache>& layers() const { return layers_; }
  BlockAllocator& allocator() { return allocator_; }
  SlotAllocator& state_slots() { return slots_; }
  const SlotAllocator& state_slots() const { return slots_; }
  bool has_state() const { return has_state_; }
  int64_t block_size() const { return block_size_; }
  int64_t num_blocks() const { return num_blocks_; }
  DType kv_dtype() const { return kv_dtype_; }
  size_t bytes() const;        // KV blocks and state pool
  size_t state_bytes() const;  // the state pool alone
  // Blocks for `tokens` positions.
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Blocks that fit in `bytes` for this model (at least 2: the reserved block and one usable).
  static int64_t blocks_for_bytes(const ModelConfig& config, int64_t block_size, size_t bytes,
                                  DType kv_dtype = DType::F32);
  // Bytes of one sequence's state slot over all linear-attention layers (Note [State memory]); 0 for
  // models without them.
  static size_t state_bytes_per_sequence(const ModelConfig& config);

 private:
  std::vector<LayerKvCache> layers_;
  BlockAllocator allocator_;
  SlotAllocator slots_;
  int64_t block_size_, num_blocks_;
  bool has_state_ = false;
  DType kv_dtype_ = DType::F32;
};

}  // namespace opchain
