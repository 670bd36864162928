#pragma once
// Layer 4: the `paged_prefill_attention` op's arguments. Kernel signature: void(const PagedPrefillAttentionArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"
#include "ops/step_metadata.h"

namespace opchain {

// Causal attention of new tokens over the paged cache (cached context + the new tokens, which
// fill_kv_cache has already written). New token i of a sequence sees kv positions <= kv_len - q_len + i.
struct PagedPrefillAttentionArgs {
  Tensor q;        // f32 [n, q_heads, d]
  Tensor k_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor v_cache;  // C [num_blocks, block_size, kv_heads, d]
  Tensor out;      // f32 [n, q_heads, d]
  float scale = 1.0f;
  const AttnMetadata* meta = nullptr;
  MatmulPrecision precision = MatmulPrecision::F32;  // what q.k and p.v see: Note [Matmul precision]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = PagedPrefillAttentionArgs;
    return std::tuple{Field{"q", Role::In, &A::q},
                      Field{"k_cache", Role::In, &A::k_cache},
                      Field{"v_cache", Role::In, &A::v_cache},
                      Field{"scale", Role::Attr, &A::scale},
                      Field{"precision", Role::Attr, &A::precision, false},
                      Field{"meta", Role::Meta, &A::meta},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
