#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

// out = rms_norm(x [+ residual]) * (1 + weight): the rms_norm row step on a weight shifted by one,
// which is the reference's (1 + w) rounded the same way once per call.
static void zero_centered_rms_norm(const ZeroCenteredRmsNormArgs& a) {
  const SimdKernels& sk = simd();
  const int64_t h = a.weight.size(0), rows = h ? a.x.numel() / h : 0;
  thread_local std::vector<float> wbuf;
  float* w = scratch(wbuf, static_cast<size_t>(h));
  row_to_f32(a.weight.raw(), a.weight.dtype(), w, h);
  for (int64_t c = 0; c < h; ++c) w[c] = 1.0f + w[c];
  const bool add = !a.residual.is_null();
  parallel_rows(rows, 2 * h, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* x = a.x.data<float>() + r * h;
      if (add) {
        float* res = a.residual.data<float>() + r * h;
        for (int64_t c = 0; c < h; ++c) res[c] += x[c];
        x = res;
      }
      rms_norm_row(sk, x, w, a.eps, h, a.out.data<float>() + r * h);
    }
  });
}

void register_zero_centered_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    add_kernel<OpType::ZeroCenteredRmsNorm>(reg, t, zero_centered_rms_norm);
}

}  // namespace opchain::cpu
