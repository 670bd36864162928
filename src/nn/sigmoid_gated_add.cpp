#include "nn/sigmoid_gated_add.h"

namespace opchain::nn {

SigmoidGatedAdd::SigmoidGatedAdd(const ModuleContext& mc)
    : impl_(build_impl<OpType::SigmoidGatedAdd>(mc, "SigmoidGatedAdd", DType::F32)) {}

void SigmoidGatedAdd::forward(const Tensor& gate, const Tensor& y, const Tensor& out) const {
  (*impl_)(SigmoidGatedAddArgs{gate, y, out});
}

}  // namespace opchain::nn
