#include "nn/fused_moe.h"

namespace opchain::nn {

FusedMoE::FusedMoE(const ModuleContext& mc, ExpertWeights experts)
    : experts_(std::move(experts)),
      precision_(mc.matmul_precision()),
      impl_(build_impl<OpType::FusedMoe>(mc, "FusedMoE", experts_.dtype())) {}

Tensor FusedMoE::forward(StepContext& ctx, const Tensor& x, const Tensor& topk_weights, const Tensor& topk_ids) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  impl_->forward(ctx, FusedMoeArgs{x, &experts_, topk_weights, topk_ids, out, &ctx.moe, precision_});
  return out;
}

}  // namespace opchain::nn
