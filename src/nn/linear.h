#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// y = x W^T + b with W in Hugging Face layout [out, in].
class Linear {
 public:
  Linear(const ModuleContext& mc, Tensor weight, Tensor bias = {});
  Tensor forward(StepContext& ctx, const Tensor& x) const;
  int64_t out_features() const { return weight_.size(0); }

 private:
  Tensor weight_, bias_;
  MatmulPrecision precision_;
  std::unique_ptr<KernelImpl<OpType::Linear>> impl_;
};

}  // namespace opchain::nn
