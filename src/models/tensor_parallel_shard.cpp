#include "models/tensor_parallel_shard.h"

#include "core/error.h"

namespace opchain {

TpShard tp_shard(const DeviceContext& dev) { return {dev.placement.tp_rank, dev.placement.tp_size}; }

std::pair<int64_t, int64_t> even_block(int64_t total, const TpShard& tp, const std::string& what) {
  if (total % tp.size != 0)
    throw FormatError("tensor parallel size " + std::to_string(tp.size) + " does not divide the " +
                      std::to_string(total) + " " + what + "; choose --tp among the divisors of " +
                      std::to_string(total));
  const int64_t per = total / tp.size;
  return {tp.rank * per, (tp.rank + 1) * per};
}

HeadShard shard_heads(int64_t heads, int64_t kv_heads, const TpShard& tp, const std::string& where) {
  if (tp.whole()) return {heads, 0, kv_heads, 0};
  const auto [q0, q1] = even_block(heads, tp, "attention heads of " + where);
  HeadShard s{q1 - q0, q0, 0, 0};
  if (kv_heads % tp.size == 0) {
    s.kv_heads = kv_heads / tp.size;
    s.kv_begin = tp.rank * s.kv_heads;
  } else if (tp.size % kv_heads == 0) {
    s.kv_heads = 1;
    s.kv_begin = tp.rank / (tp.size / kv_heads);
  } else {
    throw FormatError("tensor parallel size " + std::to_string(tp.size) + " neither divides nor is a multiple of the " +
                      std::to_string(kv_heads) + " KV heads of " + where);
  }
  return s;
}

Weight shard_rows(const Weight& w, const TpShard& tp, std::pair<int64_t, int64_t> block, int64_t unit) {
  if (tp.whole()) return w;
  return select_rows(w, {{block.first * unit, block.second * unit}});
}

Weight shard_cols(const Weight& w, const TpShard& tp, std::pair<int64_t, int64_t> block, int64_t unit) {
  if (tp.whole()) return w;
  return select_cols(w, block.first * unit, block.second * unit);
}

std::pair<int64_t, int64_t> expert_block(const DeviceContext& dev, int64_t total, const std::string& where) {
  const int64_t ep = dev.placement.ep_size;
  if (ep <= 1) return {0, total};
  if (total % ep != 0)
    throw FormatError("expert parallel size " + std::to_string(ep) + " does not divide the " + std::to_string(total) +
                      " experts of " + where + "; choose --ep among the divisors of " + std::to_string(total));
  const int64_t per = total / ep;
  return {dev.placement.ep_rank * per, (dev.placement.ep_rank + 1) * per};
}

}  // namespace opchain
