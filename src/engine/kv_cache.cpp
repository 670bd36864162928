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

SlotAllocator::SlotAllocator(int64_t num_slots) : total_(std::max<int64_t>(0, num_slots)) {
  for (int64_t s = total_ - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));  // low slots first
}

int32_t SlotAllocator::allocate() {
  if (free_.empty()) return -1;
  const int32_t s = free_.back();
  free_.pop_back();
  return s;
}

void SlotAllocator::free(int32_t slot) {
  if (slot >= 0) free_.push_back(slot);
}

DType kv_cache_dtype(MatmulPrecision p) { return p == MatmulPrecision::F32 ? DType::F32 : DType::BF16; }

KvCache::KvCache(const ModelConfig& c, int64_t num_blocks, int64_t block_size, int64_t num_state_slots, DType kv_dtype)
    : allocator_(num_blocks),
      slots_(num_state_slots),
      block_size_(block_size),
      num_blocks_(num_blocks),
      kv_dtype_(kv_dtype) {
  if (kv_dtype != DType::F32 && kv_dtype != DType::BF16)
    throw InvalidArgumentError("the KV cache holds f32 or bf16, not " + std::string(dtype_name(kv_dtype)));
  if (block_size <= 0) throw InvalidArgumentError("KV block size must be positive, got " + std::to_string(block_size));
  if (num_blocks < 2) throw InvalidArgumentError("KV cache needs at least 2 blocks (block 0 is reserved)");
  has_state_ = c.num_linear_attention_layers() > 0;
  if (has_state_ && num_state_slots < 1)
    throw InvalidArgumentError("a model with linear-attention layers needs at least 1 state slot, got " +
                               std::to_string(num_state_slots));
  const LinearAttentionConfig& lin = c.linear;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerKvCache layer;
    if (c.is_linear_attention(l)) {
      layer.conv_state = Tensor::empty(DType::F32, {num_state_slots, lin.conv_kernel - 1, lin.conv_dim()});
      layer.recurrent_state =
          Tensor::empty(DType::F32, {num_state_slots, lin.num_value_heads, lin.key_head_dim, lin.value_head_dim});
    } else {
      layer.k = Tensor::empty(kv_dtype, {num_blocks, block_size, c.num_key_value_heads, c.head_dim});
      layer.v = Tensor::empty(kv_dtype, {num_blocks, block_size, c.num_key_value_heads, c.head_dim});
    }
    layers_.push_back(std::move(layer));
  }
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const auto& l : layers_)
    if (!l.k.is_null()) total += l.k.nbytes() + l.v.nbytes();  // linear-attention layers have none
  return total + state_bytes();
}

size_t KvCache::state_bytes() const {
  size_t total = 0;
  for (const auto& l : layers_)
    if (!l.conv_state.is_null()) total += l.conv_state.nbytes() + l.recurrent_state.nbytes();
  return total;
}

int64_t KvCache::blocks_for_bytes(const ModelConfig& c, int64_t block_size, size_t bytes, DType kv_dtype) {
  const int64_t kv_layers = std::max<int64_t>(1, c.num_full_attention_layers());
  const size_t per_block =
      static_cast<size_t>(2 * kv_layers * block_size * c.num_key_value_heads * c.head_dim) * dtype_size(kv_dtype);
  return std::max<int64_t>(2, static_cast<int64_t>(bytes / per_block));
}

size_t KvCache::state_bytes_per_sequence(const ModelConfig& c) {
  const LinearAttentionConfig& l = c.linear;
  const size_t per_layer =
      static_cast<size_t>((l.conv_kernel - 1) * l.conv_dim() + l.num_value_heads * l.key_head_dim * l.value_head_dim) *
      4;
  return per_layer * static_cast<size_t>(c.num_linear_attention_layers());
}

}  // namespace opchain
