#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// RMSNorm over the last dim; forward_add also folds the residual add in (add_rms_norm).
class RMSNorm {
 public:
  RMSNorm(const ModuleContext& mc, Tensor weight, float eps);
  Tensor forward(StepContext& ctx, const Tensor& x) const;
  // residual += x; returns rms_norm(residual).
  Tensor forward_add(StepContext& ctx, const Tensor& x, const Tensor& residual) const;

 private:
  Tensor weight_;
  float eps_;
  std::unique_ptr<OpImpl<OpType::RmsNorm>> norm_;
  std::unique_ptr<OpImpl<OpType::AddRmsNorm>> add_norm_;
};

}  // namespace opchain::nn
