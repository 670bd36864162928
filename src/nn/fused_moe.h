#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// The experts of one MoE layer, weights borrowed from the checkpoint.
class FusedMoE {
 public:
  FusedMoE(const ModuleContext& mc, ExpertWeights experts);
  Tensor forward(StepContext& ctx, const Tensor& x, const Tensor& topk_weights, const Tensor& topk_ids) const;

 private:
  ExpertWeights experts_;
  MatmulPrecision precision_;
  std::unique_ptr<OpImpl<OpType::FusedMoe>> impl_;
};

}  // namespace opchain::nn
