#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// The experts of one MoE layer, weights borrowed from the checkpoint. reduce_output: the experts hold
// this tensor-parallel rank's block of every expert's intermediate features (Note [Tensor parallel]),
// so the output is a partial sum that an all-reduce over the tp group completes.
class FusedMoE {
 public:
  FusedMoE(const ModuleContext& mc, ExpertWeights experts, bool reduce_output = false);
  Tensor forward(StepContext& ctx, const Tensor& x, const Tensor& topk_weights, const Tensor& topk_ids) const;

 private:
  ExpertWeights experts_;
  MatmulPrecision precision_;
  std::unique_ptr<OpImpl<OpType::FusedMoe>> impl_;
  std::unique_ptr<TpCollectiveImpl> reduce_;
};

}  // namespace opchain::nn
