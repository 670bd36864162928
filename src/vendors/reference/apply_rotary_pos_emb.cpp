#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void rotate(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const float x1 = x[j], x2 = x[j + half];
    x[j] = x1 * cos[j] - x2 * sin[j];
    x[j + half] = x2 * cos[j] + x1 * sin[j];
  }
}

static void apply_rotary_pos_emb(const ApplyRotaryPosEmbArgs& a) {
  const int64_t n = a.q.size(0), hq = a.q.size(1), hk = a.k.size(1), d = a.q.size(2);
  const int64_t half = a.cos.size(1);  // rd / 2: channels [2 * half, d) pass unchanged (partial rotary)
  for (int64_t i = 0; i < n; ++i) {
    const float* c = a.cos.data<float>() + i * half;
    const float* s = a.sin.data<float>() + i * half;
    for (int64_t h = 0; h < hq; ++h) rotate(a.q.data<float>() + (i * hq + h) * d, c, s, half);
    for (int64_t h = 0; h < hk; ++h) rotate(a.k.data<float>() + (i * hk + h) * d, c, s, half);
  }
}

void register_apply_rotary_pos_emb(Registry& reg) {
  reg.add<OpType::ApplyRotaryPosEmb>(kReferenceVendor, DType::F32, apply_rotary_pos_emb,
                                     "reference::apply_rotary_pos_emb");
}

}  // namespace opchain::reference
