#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void gdn_gating(const GdnGatingArgs& a) {
  const int64_t n = a.ba.size(0), nv = a.a_log.numel();
  for (int64_t t = 0; t < n; ++t) {
    const float* b = a.ba.data<float>() + t * 2 * nv;
    const float* av = b + nv;
    for (int64_t h = 0; h < nv; ++h) {
      const float x = av[h] + load_as_f32(a.dt_bias.raw(), a.dt_bias.dtype(), static_cast<size_t>(h));
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
      a.g.data<float>()[t * nv + h] =
          -std::exp(load_as_f32(a.a_log.raw(), a.a_log.dtype(), static_cast<size_t>(h))) * softplus;
      a.beta.data<float>()[t * nv + h] = 1.0f / (1.0f + std::exp(-b[h]));
    }
  }
}

void register_gdn_gating(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::GdnGating>(kReferenceVendor, t, gdn_gating, "reference::gdn_gating");
}

}  // namespace opchain::reference
