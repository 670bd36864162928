#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// Gated DeltaNet's output norm, per value head: weight * rms_norm(x) * silu(z).
class GatedRMSNorm {
 public:
  GatedRMSNorm(const ModuleContext& mc, Tensor weight, float eps);
  // x [n, heads, d], z [n, heads * d] -> out [n, heads * d].
  Tensor forward(StepContext& ctx, const Tensor& x, const Tensor& z) const;

 private:
  Tensor weight_;
  float eps_;
  std::unique_ptr<OpImpl<OpType::GatedRmsNorm>> impl_;
};

}  // namespace opchain::nn
