#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// Rotate-half over the first 2 * half channels: dimension j pairs with j + half.
static inline void rotate(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const float x1 = x[j], x2 = x[j + half];
    x[j] = x1 * cos[j] - x2 * sin[j];
    x[j + half] = x2 * cos[j] + x1 * sin[j];
  }
}

static void apply_rotary_pos_emb(const ApplyRotaryPosEmbArgs& a) {
  const int64_t n = a.q.size(0), hq = a.q.size(1), hk = a.k.size(1), d = a.q.size(2);
  const int64_t half = a.cos.size(1);  // rd / 2: channels [2 * half, d) pass unchanged (partial rotary)
  parallel_rows(n, (hq + hk) * d, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float* c = a.cos.data<float>() + i * half;
      const float* s = a.sin.data<float>() + i * half;
      for (int64_t h = 0; h < hq; ++h) rotate(a.q.data<float>() + (i * hq + h) * d, c, s, half);
      for (int64_t h = 0; h < hk; ++h) rotate(a.k.data<float>() + (i * hk + h) * d, c, s, half);
    }
  });
}

void register_apply_rotary_pos_emb(Registry& reg) {
  add_kernel<OpType::ApplyRotaryPosEmb>(reg, DType::F32, apply_rotary_pos_emb);
}

}  // namespace opchain::cpu
