#include "nn/gated_delta_rule.h"

namespace opchain::nn {

GatedDeltaRule::GatedDeltaRule(const ModuleContext& mc, int64_t num_k_heads, float scale)
    : num_k_heads_(num_k_heads),
      scale_(scale),
      impl_(build_impl<OpType::GatedDeltaRule>(mc, "GatedDeltaRule", DType::F32)) {}

Tensor GatedDeltaRule::forward(StepContext& ctx, const Tensor& qkv, const Tensor& g, const Tensor& beta,
                               const Tensor& state) const {
  Tensor out = ctx.workspace->alloc(DType::F32, {qkv.size(0), state.size(1), state.size(3)});
  GatedDeltaRuleArgs args;
  args.qkv = qkv;
  args.g = g;
  args.beta = beta;
  args.state = state;
  args.out = out;
  args.num_k_heads = num_k_heads_;
  args.scale = scale_;
  impl_->forward(ctx, args);
  return out;
}

}  // namespace opchain::nn
