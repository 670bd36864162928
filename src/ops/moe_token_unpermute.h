#pragma once
// Layer 4: the `moe_token_unpermute` op's arguments. Kernel signature: void(const MoeTokenUnpermuteArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// Weighted gather back to token order: out[t] = sum_j topk_weights[t, j] * expert_out[pair_to_sorted[t*k+j]].
struct MoeTokenUnpermuteArgs {
  Tensor expert_out;      // f32 [n*k, h] in expert-sorted order
  Tensor pair_to_sorted;  // i32 [n*k]
  Tensor topk_weights;    // f32 [n, k]
  Tensor out;             // f32 [n, h]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = MoeTokenUnpermuteArgs;
    return std::tuple{Field{"expert_out", Role::In, &A::expert_out},
                      Field{"pair_to_sorted", Role::In, &A::pair_to_sorted},
                      Field{"topk_weights", Role::In, &A::topk_weights}, Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
