#pragma once
// Layer 4: the `fused_moe` op's arguments. Kernel signature: void(const FusedMoeArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/expert_weights.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"
#include "ops/step_metadata.h"

namespace opchain {

// Experts: out[t] = sum_j topk_weights[t, j] * down_e(silu(gate_e(x_t)) * up_e(x_t)), e = topk_ids[t, j].
// Rows with meta->x_active_mask == 0 produce zeros and no expert computes them.
struct FusedMoeArgs {
  Tensor hidden;  // f32 [n, h]
  const ExpertWeights* experts = nullptr;
  Tensor topk_weights;  // f32 [n, k]
  Tensor topk_ids;      // i32 [n, k]
  Tensor out;           // f32 [n, h]
  const MoeMetadata* meta = nullptr;
  MatmulPrecision precision = MatmulPrecision::F32;  // Note [Matmul precision]: all three matmuls

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = FusedMoeArgs;
    return std::tuple{Field{"hidden", Role::In, &A::hidden},
                      Field{"experts", Role::In, &A::experts},
                      Field{"topk_weights", Role::In, &A::topk_weights},
                      Field{"topk_ids", Role::In, &A::topk_ids},
                      Field{"precision", Role::Attr, &A::precision},
                      Field{"meta", Role::Meta, &A::meta},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
