#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// The MoE router's selection: softmax over experts, top-k, optional renormalisation. The router's
// linear layer is a separate nn::Linear; this module reads router_n_groups from the step's MoE metadata.
class MoeRouter {
 public:
  MoeRouter(const ModuleContext& mc, int64_t top_k, bool renormalize);
  struct Routing {
    Tensor weights;  // f32 [n, k]
    Tensor ids;      // i32 [n, k]
  };
  Routing forward(StepContext& ctx, const Tensor& router_logits) const;

 private:
  int64_t top_k_;
  bool renormalize_;
  std::unique_ptr<OpImpl<OpType::MoeGatingTopkSoftmax>> impl_;
};

}  // namespace opchain::nn
