#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

// The row step shared with add_rms_norm: sum of squares by the fixed-order dot, then
// out = x * inv * weight as transformers does. Reads all of x before writing, so out may alias x.
void rms_norm_row(const SimdKernels& sk, const float* x, const float* w, float eps, int64_t h, float* out) {
  const float ss = sk.dot(x, x, h);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + eps);
  for (int64_t c = 0; c < h; ++c) out[c] = x[c] * inv * w[c];
}

// The weight as f32: a view when it already is, else converted into `buf` (h floats, once per call).
const float* weight_f32(const Tensor& w, std::vector<float>& buf) {
  if (w.dtype() == DType::F32) return w.data<float>();
  float* dst = scratch(buf, static_cast<size_t>(w.numel()));
  row_to_f32(w.raw(), w.dtype(), dst, w.numel());
  return dst;
}

static void rms_norm(const RmsNormArgs& a) {
  const SimdKernels& sk = simd();
  const int64_t h = a.weight.size(0), rows = h ? a.x.numel() / h : 0;
  thread_local std::vector<float> wbuf;
  const float* w = weight_f32(a.weight, wbuf);
  parallel_rows(rows, h, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      rms_norm_row(sk, a.x.data<float>() + r * h, w, a.eps, h, a.out.data<float>() + r * h);
  });
}

void register_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::RmsNorm>(reg, t, rms_norm);
}

}  // namespace opchain::cpu
