#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// transformers' Qwen3NextRMSNorm: x * rsqrt(mean(x^2) + eps), then * (1 + w), in f32.
static void zero_centered_rms_norm(const ZeroCenteredRmsNormArgs& a) {
  const int64_t h = a.weight.size(0), rows = a.x.numel() / h;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.x.data<float>() + r * h;
    if (!a.residual.is_null()) {
      float* res = a.residual.data<float>() + r * h;
      for (int64_t c = 0; c < h; ++c) res[c] += x[c];
      x = res;
    }
    float ss = 0.0f;
    for (int64_t c = 0; c < h; ++c) ss += x[c] * x[c];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + a.eps);
    float* out = a.out.data<float>() + r * h;
    for (int64_t c = 0; c < h; ++c)
      out[c] = x[c] * inv * (1.0f + load_as_f32(a.weight.raw(), a.weight.dtype(), static_cast<size_t>(c)));
  }
}

void register_zero_centered_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::ZeroCenteredRmsNorm>(kReferenceVendor, t, zero_centered_rms_norm,
                                         "reference::zero_centered_rms_norm");
}

}  // namespace opchain::reference
