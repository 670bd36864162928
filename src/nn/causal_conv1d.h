#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// Depthwise causal conv over time + silu, continuing each sequence from its conv state slot.
class CausalConv1d {
 public:
  // weight: [channels, K] (or Hugging Face's [channels, 1, K]).
  CausalConv1d(const ModuleContext& mc, Tensor weight);
  // x [n, channels]; conv_state [slots, K-1, channels] -> out [n, channels].
  Tensor forward(StepContext& ctx, const Tensor& x, const Tensor& conv_state) const;

 private:
  Tensor weight_;
  std::unique_ptr<OpImpl<OpType::CausalConv1d>> impl_;
};

}  // namespace opchain::nn
