#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// Gated DeltaNet's per-token gates: log-decay g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).
class GdnGating {
 public:
  GdnGating(const ModuleContext& mc, Tensor a_log, Tensor dt_bias);
  struct Gates {
    Tensor g, beta;  // f32 [n, nv] each
  };
  // ba: [n, 2 * nv], b then a.
  Gates forward(StepContext& ctx, const Tensor& ba) const;

 private:
  Tensor a_log_, dt_bias_;
  std::unique_ptr<OpImpl<OpType::GdnGating>> impl_;
};

}  // namespace opchain::nn
