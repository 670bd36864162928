#include "nn/sigmoid_gate_mul.h"

namespace opchain::nn {

SigmoidGateMul::SigmoidGateMul(const ModuleContext& mc)
    : impl_(build_impl<OpType::SigmoidGateMul>(mc, "SigmoidGateMul", DType::F32)) {}

void SigmoidGateMul::forward(const Tensor& gate, const Tensor& x) const { (*impl_)(SigmoidGateMulArgs{gate, x}); }

}  // namespace opchain::nn
