#include "nn/zero_centered_rms_norm.h"

namespace opchain::nn {

ZeroCenteredRMSNorm::ZeroCenteredRMSNorm(const ModuleContext& mc, Tensor weight, float eps)
    : weight_(std::move(weight)),
      eps_(eps),
      impl_(build_impl<OpType::ZeroCenteredRmsNorm>(mc, "ZeroCenteredRMSNorm", weight_.dtype())) {}

Tensor ZeroCenteredRMSNorm::forward(StepContext& ctx, const Tensor& x) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  (*impl_)(ZeroCenteredRmsNormArgs{x, Tensor(), weight_, out, eps_});
  return out;
}

Tensor ZeroCenteredRMSNorm::forward_add(StepContext& ctx, const Tensor& x, const Tensor& residual) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  (*impl_)(ZeroCenteredRmsNormArgs{x, residual, weight_, out, eps_});
  return out;
}

}  // namespace opchain::nn
