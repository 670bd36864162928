#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// y = x W^T + b with W in Hugging Face layout [out, in], dense or quantised (Note [Quantised weights]).
class Linear {
 public:
  Linear(const ModuleContext& mc, Weight weight, Tensor bias = {});
  Tensor forward(StepContext& ctx, const Tensor& x) const;
  int64_t out_features() const { return weight_.rows(); }
  const Weight& weight() const { return weight_; }

 private:
  Weight weight_;
  Tensor bias_;
  MatmulPrecision precision_;
  std::unique_ptr<OpImpl<OpType::Linear>> impl_;
};

}  // namespace opchain::nn
