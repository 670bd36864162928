#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// transformers: variance in f32, x * rsqrt(var + eps), cast back to the input dtype, then * weight.
static void rms_norm_row(const float* x, const Tensor& w, float eps, int64_t h, float* out) {
  float ss = 0.0f;
  for (int64_t c = 0; c < h; ++c) ss += x[c] * x[c];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + eps);
  for (int64_t c = 0; c < h; ++c) out[c] = x[c] * inv * load_as_f32(w.raw(), w.dtype(), static_cast<size_t>(c));
}

static void rms_norm(const RmsNormArgs& a) {
  const int64_t h = a.weight.size(0), rows = a.x.numel() / h;
  for (int64_t r = 0; r < rows; ++r)
    rms_norm_row(a.x.data<float>() + r * h, a.weight, a.eps, h, a.out.data<float>() + r * h);
}

void register_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::RmsNorm>(kReferenceVendor, t, rms_norm, "reference::rms_norm");
}

static void add_rms_norm(const AddRmsNormArgs& a) {
  const int64_t h = a.weight.size(0), rows = a.x.numel() / h;
  for (int64_t r = 0; r < rows; ++r) {
    float* res = a.residual.data<float>() + r * h;
    const float* x = a.x.data<float>() + r * h;
    for (int64_t c = 0; c < h; ++c) res[c] += x[c];
    rms_norm_row(res, a.weight, a.eps, h, a.out.data<float>() + r * h);
  }
}

void register_add_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::AddRmsNorm>(kReferenceVendor, t, add_rms_norm, "reference::add_rms_norm");
}

}  // namespace opchain::reference
