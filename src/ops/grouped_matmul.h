#pragma once
// Layer 4: the `grouped_matmul` op's arguments. Kernel signature: void(const GroupedMatmulArgs&).
#include <memory>
#include <tuple>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"

namespace opchain {

// For each expert e: out[rows of e, col_offset : col_offset + N] = x[rows of e] @ weights[e]^T.
struct GroupedMatmulArgs {
  Tensor x;                                      // f32 [m, k_in]
  Tensor expert_offsets;                         // i32 [experts + 1]
  const std::vector<Tensor>* weights = nullptr;  // per expert, W [N, k_in] (or its codes)
  Tensor out;                                    // f32 [m, ld]
  int64_t out_col_offset = 0;
  MatmulPrecision precision = MatmulPrecision::F32;                        // Note [Matmul precision]
  const std::vector<std::shared_ptr<const QuantParams>>* quant = nullptr;  // per expert, when quantised

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = GroupedMatmulArgs;
    return std::tuple{Field{"x", Role::In, &A::x},
                      Field{"expert_offsets", Role::In, &A::expert_offsets},
                      Field{"weights", Role::In, &A::weights},
                      Field{"quant", Role::In, &A::quant},
                      Field{"out_col_offset", Role::Attr, &A::out_col_offset},
                      Field{"precision", Role::Attr, &A::precision},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
