#pragma once
// The weights of one MoE layer's experts: views into the checkpoint for dense experts (no repacking,
// no copy), or each expert's codes and parameters when quantised (Note [Quantised weights]).
#include <memory>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"

namespace opchain {

struct ExpertWeights {
  std::vector<Tensor> gate;  // per expert, W [intermediate, hidden] (or its codes)
  std::vector<Tensor> up;    // per expert, W [intermediate, hidden]
  std::vector<Tensor> down;  // per expert, W [hidden, intermediate]
  // Quantised experts: each matrix's parameters, one per expert; empty for dense experts.
  std::vector<std::shared_ptr<const QuantParams>> gate_q, up_q, down_q;

  // Expert parallel (Note [Expert parallel] in backends/fused_moe.h): these are experts
  // [first_expert, first_expert + num_experts()) of the layer's total_experts (0: all of them).
  int64_t first_expert = 0;
  int64_t total_experts = 0;

  bool quantized() const { return !gate_q.empty(); }
  int64_t num_experts() const { return static_cast<int64_t>(gate.size()); }
  int64_t intermediate() const { return gate.empty() ? 0 : gate[0].size(0); }
  int64_t hidden() const { return gate.empty() ? 0 : quantized() ? gate_q[0]->in_features : gate[0].size(1); }
  DType dtype() const { return gate.empty() ? DType::F32 : gate[0].dtype(); }
};

}  // namespace opchain
