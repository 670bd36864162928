#include "nn/gated_rms_norm.h"

namespace opchain::nn {

GatedRMSNorm::GatedRMSNorm(const ModuleContext& mc, Tensor weight, float eps)
    : weight_(std::move(weight)),
      eps_(eps),
      impl_(build_impl<OpType::GatedRmsNorm>(mc, "GatedRMSNorm", weight_.dtype())) {}

Tensor GatedRMSNorm::forward(StepContext& ctx, const Tensor& x, const Tensor& z) const {
  const int64_t n = x.size(0), width = x.numel() / n;
  Tensor out = ctx.workspace->alloc(DType::F32, {n, width});
  (*impl_)(GatedRmsNormArgs{x, z, weight_, out, eps_});
  return out;
}

}  // namespace opchain::nn
