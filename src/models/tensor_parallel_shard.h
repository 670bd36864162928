#pragma once
// Which part of each weight this rank loads when the model is tensor- or expert-parallel (Note
// [Tensor parallel] in backends/tensor_parallel.h, Note [Expert parallel] in backends/fused_moe.h).
// Every rule that cannot hold (heads that the tp size does not divide, experts that the ep size does
// not divide) is a FormatError naming the model's dimension and the sizes.
#include <string>
#include <utility>

#include "core/quant.h"
#include "io/hf_config.h"
#include "nn/module.h"

namespace opchain {

struct TpShard {
  int64_t rank = 0, size = 1;
  bool whole() const { return size == 1; }
};
TpShard tp_shard(const DeviceContext& dev);

// [begin, end) of `total` units split evenly over the shard's ranks; `what` names the units.
std::pair<int64_t, int64_t> even_block(int64_t total, const TpShard& tp, const std::string& what);

// The attention heads this rank computes: query heads [q_begin, q_begin + heads) and KV heads
// [kv_begin, kv_begin + kv_heads). KV heads are split when tp divides them, else each rank holds the
// one its query heads read.
struct HeadShard {
  int64_t heads = 0, q_begin = 0, kv_heads = 0, kv_begin = 0;
};
HeadShard shard_heads(int64_t heads, int64_t kv_heads, const TpShard& tp, const std::string& where);

// Output rows [begin * unit, end * unit) of a column-parallel weight; the weight itself when whole.
Weight shard_rows(const Weight& w, const TpShard& tp, std::pair<int64_t, int64_t> block, int64_t unit);
// Input columns of a row-parallel weight.
Weight shard_cols(const Weight& w, const TpShard& tp, std::pair<int64_t, int64_t> block, int64_t unit);

// The experts this rank holds: [first, first + count) of `total`.
std::pair<int64_t, int64_t> expert_block(const DeviceContext& dev, int64_t total, const std::string& where);

}  // namespace opchain
