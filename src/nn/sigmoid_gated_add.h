#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// out += sigmoid(gate) * y: how Qwen2-MoE mixes its always-on shared expert into the routed output.
class SigmoidGatedAdd {
 public:
  explicit SigmoidGatedAdd(const ModuleContext& mc);
  void forward(const Tensor& gate, const Tensor& y, const Tensor& out) const;

 private:
  std::unique_ptr<OpImpl<OpType::SigmoidGatedAdd>> impl_;
};

}  // namespace opchain::nn
