#include "nn/fused_moe.h"

namespace opchain::nn {

FusedMoE::FusedMoE(const ModuleContext& mc, ExpertWeights experts, bool reduce_output)
    : experts_(std::move(experts)),
      precision_(mc.matmul_precision()),
      impl_(build_impl<OpType::FusedMoe>(mc, "FusedMoE", experts_.dtype())) {
  if (reduce_output)
    reduce_ = build_tp_collective(mc.backend(), TpCollective::AllReduce, impl_params(mc, "FusedMoE", experts_.dtype()));
}

Tensor FusedMoE::forward(StepContext& ctx, const Tensor& x, const Tensor& topk_weights, const Tensor& topk_ids) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  impl_->forward(ctx, FusedMoeArgs{x, &experts_, topk_weights, topk_ids, out, &ctx.moe, precision_});
  if (reduce_) reduce_->forward(out, out);
  return out;
}

}  // namespace opchain::nn
