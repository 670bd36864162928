#include "nn/causal_conv1d.h"

namespace opchain::nn {

CausalConv1d::CausalConv1d(const ModuleContext& mc, Tensor weight)
    : weight_(weight.reshape({weight.size(0), weight.numel() / weight.size(0)})),
      impl_(build_impl<OpType::CausalConv1d>(mc, "CausalConv1d", weight_.dtype())) {}

Tensor CausalConv1d::forward(StepContext& ctx, const Tensor& x, const Tensor& conv_state) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  (*impl_)(CausalConv1dArgs{x, weight_, conv_state, out, &ctx.attn});
  return out;
}

}  // namespace opchain::nn
