#pragma once
// The weights of one MoE layer's experts, as views into the checkpoint (no repacking, no copy).
#include <vector>

#include "core/tensor.h"

namespace opchain {

struct ExpertWeights {
  std::vector<Tensor> gate;  // per expert, W [intermediate, hidden]
  std::vector<Tensor> up;    // per expert, W [intermediate, hidden]
  std::vector<Tensor> down;  // per expert, W [hidden, intermediate]
  int64_t num_experts() const { return static_cast<int64_t>(gate.size()); }
  int64_t intermediate() const { return gate.empty() ? 0 : gate[0].size(0); }
  int64_t hidden() const { return gate.empty() ? 0 : gate[0].size(1); }
  DType dtype() const { return gate.empty() ? DType::F32 : gate[0].dtype(); }
};

}  // namespace opchain
