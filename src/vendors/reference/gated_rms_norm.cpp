#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// transformers' Qwen3NextRMSNormGated: weight * (x * rsqrt(mean(x^2) + eps)), then * silu(z), in f32.
static void gated_rms_norm(const GatedRmsNormArgs& a) {
  const int64_t d = a.weight.size(0), rows = a.x.numel() / d;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.x.data<float>() + r * d;
    const float* z = a.z.data<float>() + r * d;
    float ss = 0.0f;
    for (int64_t c = 0; c < d; ++c) ss += x[c] * x[c];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + a.eps);
    float* out = a.out.data<float>() + r * d;
    for (int64_t c = 0; c < d; ++c)
      out[c] = load_as_f32(a.weight.raw(), a.weight.dtype(), static_cast<size_t>(c)) * (x[c] * inv) * silu(z[c]);
  }
}

void register_gated_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::GatedRmsNorm>(kReferenceVendor, t, gated_rms_norm, "reference::gated_rms_norm");
}

}  // namespace opchain::reference
