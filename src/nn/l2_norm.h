#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// L2-normalises the leading `heads` heads of `head_dim` in every row, in place (Gated DeltaNet's q and k).
class L2Norm {
 public:
  L2Norm(const ModuleContext& mc, int64_t heads, int64_t head_dim, float eps = 1e-6f);
  void forward(const Tensor& x) const;

 private:
  int64_t heads_, head_dim_;
  float eps_;
  std::unique_ptr<OpImpl<OpType::L2Norm>> impl_;
};

}  // namespace opchain::nn
