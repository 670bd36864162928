#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void sigmoid_gate_mul(const SigmoidGateMulArgs& a) {
  const int64_t n = a.x.numel();
  for (int64_t i = 0; i < n; ++i) a.x.data<float>()[i] *= 1.0f / (1.0f + std::exp(-a.gate.data<float>()[i]));
}

void register_sigmoid_gate_mul(Registry& reg) {
  reg.add<OpType::SigmoidGateMul>(kReferenceVendor, DType::F32, sigmoid_gate_mul, "reference::sigmoid_gate_mul");
}

}  // namespace opchain::reference
