#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// What a tensor-parallel shard of a linear layer does with its output (Note [Tensor parallel] in
// backends/tensor_parallel.h): nothing (whole layers, column shards read as they are), all-reduce the
// partial sums (row-parallel), or gather the column blocks into `full_out` columns (lm_head).
struct LinearParallel {
  enum Kind { None, ReduceOutput, GatherOutputColumns } kind = None;
  int64_t full_out = 0;  // GatherOutputColumns: the whole layer's output features
};

// y = x W^T + b with W in Hugging Face layout [out, in], dense or quantised (Note [Quantised weights]).
class Linear {
 public:
  Linear(const ModuleContext& mc, Weight weight, Tensor bias = {}, LinearParallel parallel = {});
  Tensor forward(StepContext& ctx, const Tensor& x) const;
  // The features forward() returns (the whole layer's when the shard's columns are gathered).
  int64_t out_features() const { return gather_ ? parallel_.full_out : weight_.rows(); }
  const Weight& weight() const { return weight_; }

 private:
  Weight weight_;
  Tensor bias_;
  MatmulPrecision precision_;
  LinearParallel parallel_;
  std::unique_ptr<OpImpl<OpType::Linear>> impl_;
  std::unique_ptr<TpCollectiveImpl> reduce_, gather_;
};

}  // namespace opchain::nn
