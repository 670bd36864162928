#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// x *= sigmoid(gate) in place: the output gate of gated attention.
class SigmoidGateMul {
 public:
  explicit SigmoidGateMul(const ModuleContext& mc);
  void forward(const Tensor& gate, const Tensor& x) const;

 private:
  std::unique_ptr<OpImpl<OpType::SigmoidGateMul>> impl_;
};

}  // namespace opchain::nn
