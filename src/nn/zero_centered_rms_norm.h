#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// RMSNorm with a zero-centred weight: norm(x) * (1 + w) (Qwen3-Next / Qwen3.5 layer, final and q/k
// norms); forward_add also folds the residual add in.
class ZeroCenteredRMSNorm {
 public:
  ZeroCenteredRMSNorm(const ModuleContext& mc, Tensor weight, float eps);
  Tensor forward(StepContext& ctx, const Tensor& x) const;
  // residual += x; returns the norm of residual.
  Tensor forward_add(StepContext& ctx, const Tensor& x, const Tensor& residual) const;

 private:
  Tensor weight_;
  float eps_;
  std::unique_ptr<OpImpl<OpType::ZeroCenteredRmsNorm>> impl_;
};

}  // namespace opchain::nn
