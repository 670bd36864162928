#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void sigmoid_gated_add(const SigmoidGatedAddArgs& a) {
  const int64_t n = a.y.size(0), h = a.y.size(1);
  for (int64_t t = 0; t < n; ++t) {
    const float g = 1.0f / (1.0f + std::exp(-a.gate.data<float>()[t]));
    for (int64_t c = 0; c < h; ++c) a.out.data<float>()[t * h + c] += g * a.y.data<float>()[t * h + c];
  }
}

void register_sigmoid_gated_add(Registry& reg) {
  reg.add<OpType::SigmoidGatedAdd>(kReferenceVendor, DType::F32, sigmoid_gated_add, "reference::sigmoid_gated_add");
}

}  // namespace opchain::reference
