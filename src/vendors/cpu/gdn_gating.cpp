#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

static void gdn_gating(const GdnGatingArgs& a) {
  const int64_t n = a.ba.size(0), nv = a.a_log.numel();
  thread_local std::vector<float> pbuf;
  float* neg_a = scratch(pbuf, static_cast<size_t>(2 * nv));  // -exp(a_log), then dt_bias
  float* dt = neg_a + nv;
  row_to_f32(a.dt_bias.raw(), a.dt_bias.dtype(), dt, nv);
  row_to_f32(a.a_log.raw(), a.a_log.dtype(), neg_a, nv);
  for (int64_t h = 0; h < nv; ++h) neg_a[h] = -std::exp(neg_a[h]);
  parallel_rows(n, 16 * nv, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const float* bv = a.ba.data<float>() + t * 2 * nv;
      const float* av = bv + nv;
      for (int64_t h = 0; h < nv; ++h) {
        const float x = av[h] + dt[h];
        a.g.data<float>()[t * nv + h] = neg_a[h] * (x > 20.0f ? x : std::log1p(std::exp(x)));
        a.beta.data<float>()[t * nv + h] = 1.0f / (1.0f + std::exp(-bv[h]));
      }
    }
  });
}

void register_gdn_gating(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::GdnGating>(reg, t, gdn_gating);
}

}  // namespace opchain::cpu
