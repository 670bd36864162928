#pragma once
// The paged KV cache: per layer, k and v tensors of [num_blocks, block_size, kv_heads, head_dim],
// and the allocator of their blocks. Block 0 is reserved: padding rows of a graph bucket point at it.
#include <cstdint>
#include <vector>

#include "io/hf_config.h"
#include "models/causal_lm.h"

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

class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size);
  const std::vector<LayerKvCache>& layers() const { return layers_; }
  BlockAllocator& allocator() { return allocator_; }
  int64_t block_size() const { return block_size_; }
  int64_t num_blocks() const { return num_blocks_; }
  size_t bytes() const;
  // Blocks for `tokens` positions.
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  // Blocks that fit in `bytes` for this model (at least 2: the reserved block and one usable).
  static int64_t blocks_for_bytes(const ModelConfig& config, int64_t block_size, size_t bytes);

 private:
  std::vector<LayerKvCache> layers_;
  BlockAllocator allocator_;
  int64_t block_size_, num_blocks_;
};

}  // namespace opchain
