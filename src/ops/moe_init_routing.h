#pragma once
// Layer 4: the `moe_init_routing` op's arguments. Kernel signature: void(const MoeInitRoutingArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/step_metadata.h"

namespace opchain {

// Sorts the n*k (token, choice) pairs by expert (stable: token order within an expert), gathers the
// tokens' rows into x_sorted, and records where each pair went. Inactive rows route nowhere.
struct MoeInitRoutingArgs {
  Tensor x;         // f32 [n, h]
  Tensor topk_ids;  // i32 [n, k]
  int64_t num_experts = 0;
  const MoeMetadata* meta = nullptr;
  Tensor x_sorted;        // f32 [n*k, h]; rows [expert_offsets[e], expert_offsets[e+1]) belong to e
  Tensor expert_offsets;  // i32 [experts + 1]
  Tensor pair_to_sorted;  // i32 [n*k]: sorted row of pair (t, j) = t*k + j, or -1 when not routed

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = MoeInitRoutingArgs;
    return std::tuple{Field{"x", Role::In, &A::x},
                      Field{"topk_ids", Role::In, &A::topk_ids},
                      Field{"num_experts", Role::Attr, &A::num_experts},
                      Field{"meta", Role::Meta, &A::meta},
                      Field{"x_sorted", Role::Out, &A::x_sorted},
                      Field{"expert_offsets", Role::Out, &A::expert_offsets},
                      Field{"pair_to_sorted", Role::Out, &A::pair_to_sorted}};
  }
};

}  // namespace opchain
