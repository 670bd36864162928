#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

// residual += x; out = rms_norm(residual) * weight (out may alias x: x is read before out is written).
static void add_rms_norm(const AddRmsNormArgs& a) {
  const SimdKernels& sk = simd();
  const int64_t h = a.weight.size(0), rows = h ? a.x.numel() / h : 0;
  thread_local std::vector<float> wbuf;
  const float* w = weight_f32(a.weight, wbuf);
  parallel_rows(rows, 2 * h, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* res = a.residual.data<float>() + r * h;
      const float* x = a.x.data<float>() + r * h;
      for (int64_t c = 0; c < h; ++c) res[c] += x[c];
      rms_norm_row(sk, res, w, a.eps, h, a.out.data<float>() + r * h);
    }
  });
}

void register_add_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::AddRmsNorm>(reg, t, add_rms_norm);
}

}  // namespace opchain::cpu
