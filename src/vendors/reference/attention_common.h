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

// Pointer to the cached row of kv position p of sequence b, kv head kvh.
inline const float* paged_row(const Tensor& cache, const AttnMetadata& m, int64_t b, int64_t p, int64_t kvh) {
  const int64_t bs = cache.size(1), hk = cache.size(2), d = cache.size(3);
  const int64_t block = m.block_tables.data<int32_t>()[b * m.block_tables.size(1) + p / bs];
  return cache.data<float>() + ((block * bs + p % bs) * hk + kvh) * d;
}

}  // namespace opchain::reference
