#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

static void sigmoid_gate_mul(const SigmoidGateMulArgs& a) {
  const int64_t n = a.x.size(0), m = n ? a.x.numel() / n : 0;
  const SimdKernels& sk = simd();
  parallel_rows(n, 8 * m, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      sk.sigmoid_mul(a.gate.data<float>() + r * m, a.x.data<float>() + r * m, a.x.data<float>() + r * m, m);
  });
}

void register_sigmoid_gate_mul(Registry& reg) { add_kernel<OpType::SigmoidGateMul>(reg, DType::F32, sigmoid_gate_mul); }

}  // namespace opchain::cpu
