#pragma once
// Layer 4: the `moe_gating_topk_softmax` op's arguments. Kernel signature: void(const MoeGatingTopkSoftmaxArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/step_metadata.h"

namespace opchain {

// Router: softmax over all experts in f32, then top-k (ties -> lower expert id), renormalised to
// sum 1 when `renormalize`. With meta->router_n_groups > 0 the grouped variant first keeps the
// meta->router_topk_groups groups whose best expert scores highest and picks top-k inside them.
struct MoeGatingTopkSoftmaxArgs {
  Tensor router_logits;  // f32 [n, experts]
  Tensor topk_weights;   // f32 [n, k]
  Tensor topk_ids;       // i32 [n, k]
  int64_t top_k = 1;
  bool renormalize = false;
  const MoeMetadata* meta = nullptr;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = MoeGatingTopkSoftmaxArgs;
    return std::tuple{Field{"router_logits", Role::In, &A::router_logits}, Field{"top_k", Role::Attr, &A::top_k},
                      Field{"renormalize", Role::Attr, &A::renormalize},   Field{"meta", Role::Meta, &A::meta},
                      Field{"topk_weights", Role::Out, &A::topk_weights},  Field{"topk_ids", Role::Out, &A::topk_ids}};
  }
};

}  // namespace opchain
