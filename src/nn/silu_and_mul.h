#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// The gated MLP activation: [n, 2i] -> [n, i].
class SiluAndMul {
 public:
  explicit SiluAndMul(const ModuleContext& mc);
  Tensor forward(StepContext& ctx, const Tensor& x) const;

 private:
  std::unique_ptr<OpImpl<OpType::SiluAndMul>> impl_;
};

}  // namespace opchain::nn
