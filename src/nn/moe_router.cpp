#include "nn/moe_router.h"

namespace opchain::nn {

MoeRouter::MoeRouter(const ModuleContext& mc, int64_t top_k, bool renormalize)
    : top_k_(top_k),
      renormalize_(renormalize),
      impl_(build_impl<OpType::MoeGatingTopkSoftmax>(mc, "MoeRouter", DType::F32)) {}

MoeRouter::Routing MoeRouter::forward(StepContext& ctx, const Tensor& router_logits) const {
  const int64_t n = router_logits.size(0);
  Routing r{ctx.workspace->alloc(DType::F32, {n, top_k_}), ctx.workspace->alloc(DType::I32, {n, top_k_})};
  (*impl_)(MoeGatingTopkSoftmaxArgs{router_logits, r.weights, r.ids, top_k_, renormalize_, &ctx.moe});
  return r;
}

}  // namespace opchain::nn
