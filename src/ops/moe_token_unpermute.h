#pragma once
// Layer 4: the `moe_token_unpermute` op's arguments. Kernel signature: void(const MoeTokenUnpermuteArgs&).
#include "core/tensor.h"

namespace opchain {

// Weighted gather back to token order: out[t] = sum_j topk_weights[t, j] * expert_out[pair_to_sorted[t*k+j]].
struct MoeTokenUnpermuteArgs {
  Tensor expert_out;      // f32 [n*k, h] in expert-sorted order
  Tensor pair_to_sorted;  // i32 [n*k]
  Tensor topk_weights;    // f32 [n, k]
  Tensor out;             // f32 [n, h]
};

}  // namespace opchain
