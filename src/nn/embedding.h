#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// Token embedding lookup: ids [n] -> f32 [n, hidden].
class Embedding {
 public:
  Embedding(const ModuleContext& mc, Tensor weight);
  Tensor forward(StepContext& ctx, const Tensor& ids) const;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
  std::unique_ptr<OpImpl<OpType::Embedding>> impl_;
};

}  // namespace opchain::nn
