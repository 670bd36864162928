#pragma once
// Layer 4: the `prefill_attention` op's arguments. Kernel signature: void(const PrefillAttentionArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"
#include "ops/step_metadata.h"

namespace opchain {

// Causal attention of each sequence's new tokens over themselves (no cached context).
// Query head h reads kv head h / (q_heads / kv_heads).
struct PrefillAttentionArgs {
  Tensor q;    // f32 [n, q_heads, d]
  Tensor k;    // f32 [n, kv_heads, d]
  Tensor v;    // f32 [n, kv_heads, d]
  Tensor out;  // f32 [n, q_heads, d]
  float scale = 1.0f;
  const AttnMetadata* meta = nullptr;
  MatmulPrecision precision = MatmulPrecision::F32;  // what q.k and p.v see: Note [Matmul precision]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = PrefillAttentionArgs;
    return std::tuple{Field{"q", Role::In, &A::q},
                      Field{"k", Role::In, &A::k},
                      Field{"v", Role::In, &A::v},
                      Field{"scale", Role::Attr, &A::scale},
                      Field{"precision", Role::Attr, &A::precision, false},
                      Field{"meta", Role::Meta, &A::meta},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
