#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// out += sigmoid(gate[t]) * y[t]
static void sigmoid_gated_add(const SigmoidGatedAddArgs& a) {
  const int64_t n = a.y.size(0), h = a.y.size(1);
  parallel_rows(n, 2 * h, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const float g = 1.0f / (1.0f + std::exp(-a.gate.data<float>()[t]));
      const float* y = a.y.data<float>() + t * h;
      float* out = a.out.data<float>() + t * h;
      for (int64_t c = 0; c < h; ++c) out[c] += g * y[c];
    }
  });
}

void register_sigmoid_gated_add(Registry& reg) {
  add_kernel<OpType::SigmoidGatedAdd>(reg, DType::F32, sigmoid_gated_add);
}

}  // namespace opchain::cpu
