#pragma once
// The attention definition all three reference attention kernels share: softmax(q.k * scale) @ v
// over kv positions [0, visible), in f32 with the max subtracted.
#include <vector>

#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

template <class KeyAt, class ValueAt>
void attend_one(const float* q, int64_t d, int64_t visible, float scale, KeyAt key_at, ValueAt value_at, float* out) {
  std::vector<float> scores(static_cast<size_t>(visible));
  float max_score = -INFINITY;
  for (int64_t p = 0; p < visible; ++p) {
    const float* k = key_at(p);
    float s = 0.0f;
    for (int64_t c = 0; c < d; ++c) s += q[c] * k[c];
    scores[static_cast<size_t>(p)] = s * scale;
    max_score = std::max(max_score, scores[static_cast<size_t>(p)]);
  }
  float denom = 0.0f;
  for (auto& s : scores) {
    s = std::exp(s - max_score);
    denom += s;
  }
  for (int64_t c = 0; c < d; ++c) out[c] = 0.0f;
  for (int64_t p = 0; p < visible; ++p) {
    const float* v = value_at(p);
    const float w = scores[static_cast<size_t>(p)] / denom;
    for (int64_t c = 0; c < d; ++c) out[c] += w * v[c];
  }
}

// The cached row of kv position p of sequence b, kv head kvh, as f32: a pointer into an f32 cache, or
// the row of a bf16 cache widened into `buf` (d floats), which then holds it until the next call.
// Note [KV cache dtype]: a bf16 cache stores each k/v value rounded to nearest even once, when
// fill_kv_cache writes it; attention reads it back exactly.
inline const float* paged_row(const Tensor& cache, const AttnMetadata& m, int64_t b, int64_t p, int64_t kvh,
                              std::vector<float>& buf) {
  const int64_t bs = cache.size(1), hk = cache.size(2), d = cache.size(3);
  const int64_t block = m.block_tables.data<int32_t>()[b * m.block_tables.size(1) + p / bs];
  const int64_t offset = ((block * bs + p % bs) * hk + kvh) * d;
  if (cache.dtype() == DType::F32) return cache.data<float>() + offset;
  buf.resize(static_cast<size_t>(d));
  for (int64_t c = 0; c < d; ++c)
    buf[static_cast<size_t>(c)] = load_as_f32(cache.raw(), cache.dtype(), static_cast<size_t>(offset + c));
  return buf.data();
}

}  // namespace opchain::reference
