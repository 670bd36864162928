#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

static void sigmoid_gate_mul(const SigmoidGateMulArgs& a) {
  const int64_t n = a.x.size(0), m = n ? a.x.numel() / n : 0;
  parallel_rows(n, 8 * m, [&](int64_t b, int64_t e) {
    const float* g = a.gate.data<float>();
    float* x = a.x.data<float>();
    for (int64_t i = b * m; i < e * m; ++i) x[i] *= 1.0f / (1.0f + std::exp(-g[i]));
  });
}

void register_sigmoid_gate_mul(Registry& reg) { add_kernel<OpType::SigmoidGateMul>(reg, DType::F32, sigmoid_gate_mul); }

}  // namespace opchain::cpu
