#include "engine/kv_cache.h"

#include <algorithm>

#include "core/error.h"

namespace opchain {

BlockAllocator::BlockAllocator(int64_t num_blocks) : total_(std::max<int64_t>(0, num_blocks - 1)) {
  // Hand out low block ids first (pop from the back).
  for (int64_t b = num_blocks - 1; b >= 1; --b) free_.push_back(static_cast<int32_t>(b));
}

bool BlockAllocator::allocate(int64_t n, std::vector<int32_t>& out) {
  if (n > num_free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void BlockAllocator::free(const std::vector<int32_t>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) free_.push_back(*it);
}

KvCache::KvCache(const ModelConfig& c, int64_t num_blocks, int64_t block_size)
    : allocator_(num_blocks), block_size_(block_size), num_blocks_(num_blocks) {
  if (block_size <= 0) throw InvalidArgumentError("KV block size must be positive, got " + std::to_string(block_size));
  if (num_blocks < 2) throw InvalidArgumentError("KV cache needs at least 2 blocks (block 0 is reserved)");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    layers_.push_back({Tensor::empty(DType::F32, {num_blocks, block_size, c.num_key_value_heads, c.head_dim}),
                       Tensor::empty(DType::F32, {num_blocks, block_size, c.num_key_value_heads, c.head_dim})});
  }
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const auto& l : layers_) total += l.k.nbytes() + l.v.nbytes();
  return total;
}

int64_t KvCache::blocks_for_bytes(const ModelConfig& c, int64_t block_size, size_t bytes) {
  const size_t per_block = static_cast<size_t>(2 * c.num_hidden_layers * block_size * c.num_key_value_heads * c.head_dim) * 4;
  return std::max<int64_t>(2, static_cast<int64_t>(bytes / per_block));
}

}  // namespace opchain
