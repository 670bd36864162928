#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// The gated delta rule over each sequence's recurrent state slot; the backend picks the form per step
// (Note [Delta rule forms]).
class GatedDeltaRule {
 public:
  GatedDeltaRule(const ModuleContext& mc, int64_t num_k_heads, float scale);
  // qkv [n, 2*nk*dk + nv*dv] with q and k L2-normalised; g, beta [n, nv]; state [slots, nv, dk, dv]
  // -> out [n, nv, dv].
  Tensor forward(StepContext& ctx, const Tensor& qkv, const Tensor& g, const Tensor& beta, const Tensor& state) const;

 private:
  int64_t num_k_heads_;
  float scale_;
  std::unique_ptr<OpImpl<OpType::GatedDeltaRule>> impl_;
};

}  // namespace opchain::nn
