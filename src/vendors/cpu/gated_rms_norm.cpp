#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

// out = weight * (x * inv_rms) * silu(z) per head row; reads x and z before writing out (may alias x).
static void gated_rms_norm(const GatedRmsNormArgs& a) {
  const SimdKernels& sk = simd();
  const int64_t d = a.weight.size(0), rows = d ? a.x.numel() / d : 0;
  thread_local std::vector<float> wbuf;
  const float* w = weight_f32(a.weight, wbuf);
  parallel_rows(rows, 8 * d, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* x = a.x.data<float>() + r * d;
      const float* z = a.z.data<float>() + r * d;
      float* out = a.out.data<float>() + r * d;
      const float inv = 1.0f / std::sqrt(sk.dot(x, x, d) / static_cast<float>(d) + a.eps);
      thread_local std::vector<float> gate_buf;
      float* gate = scratch(gate_buf, static_cast<size_t>(d));
      sk.silu_mul(z, nullptr, gate, d);
      for (int64_t c = 0; c < d; ++c) out[c] = w[c] * (x[c] * inv) * gate[c];
    }
  });
}

void register_gated_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::GatedRmsNorm>(reg, t, gated_rms_norm);
}

}  // namespace opchain::cpu
