#pragma once
// Layer 4: the `fill_kv_cache` op's arguments. Kernel signature: void(const FillKvCacheArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/step_metadata.h"

namespace opchain {

// Writes each new token's k and v into its cache slot (meta->slot_mapping); slot -1 is skipped.
struct FillKvCacheArgs {
  Tensor k;        // f32 [n, kv_heads, d]
  Tensor v;        // f32 [n, kv_heads, d]
  Tensor k_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor v_cache;  // C [num_blocks, block_size, kv_heads, d]
  const AttnMetadata* meta = nullptr;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = FillKvCacheArgs;
    return std::tuple{Field{"k", Role::In, &A::k}, Field{"v", Role::In, &A::v},
                      Field{"k_cache", Role::InOut, &A::k_cache}, Field{"v_cache", Role::InOut, &A::v_cache},
                      Field{"meta", Role::Meta, &A::meta}};
  }
};

}  // namespace opchain
