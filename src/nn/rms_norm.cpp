#include "nn/rms_norm.h"

namespace opchain::nn {

RMSNorm::RMSNorm(const ModuleContext& mc, Tensor weight, float eps)
    : weight_(std::move(weight)),
      eps_(eps),
      norm_(build_impl<OpType::RmsNorm>(mc, "RMSNorm", weight_.dtype())),
      add_norm_(build_impl<OpType::AddRmsNorm>(mc, "RMSNorm", weight_.dtype())) {}

Tensor RMSNorm::forward(StepContext& ctx, const Tensor& x) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  (*norm_)(RmsNormArgs{x, weight_, out, eps_});
  return out;
}

Tensor RMSNorm::forward_add(StepContext& ctx, const Tensor& x, const Tensor& residual) const {
  Tensor out = ctx.workspace->alloc(DType::F32, x.shape());
  (*add_norm_)(AddRmsNormArgs{x, residual, weight_, out, eps_});
  return out;
}

}  // namespace opchain::nn
