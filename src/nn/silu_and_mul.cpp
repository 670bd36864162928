#include "nn/silu_and_mul.h"

namespace opchain::nn {

SiluAndMul::SiluAndMul(const ModuleContext& mc) : impl_(build_impl<OpType::SiluAndMul>(mc, "SiluAndMul", DType::F32)) {}

Tensor SiluAndMul::forward(StepContext& ctx, const Tensor& x) const {
  Tensor out = ctx.workspace->alloc(DType::F32, {x.size(0), x.size(1) / 2});
  (*impl_)(SiluAndMulArgs{x, out});
  return out;
}

}  // namespace opchain::nn
