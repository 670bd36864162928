#include "nn/attention.h"

namespace opchain::nn {

Attention::Attention(const ModuleContext& mc, int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, float scale)
    : heads_(num_heads),
      kv_heads_(num_kv_heads),
      head_dim_(head_dim),
      scale_(scale),
      impl_(build_impl<OpType::PagedDecodeAttention>(mc, "Attention", DType::F32)) {}

Tensor Attention::forward(StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                          const Tensor& v_cache) const {
  const int64_t n = q.size(0);
  Tensor out = ctx.workspace->alloc(DType::F32, {n, heads_, head_dim_});
  impl_->forward(ctx, q.reshape({n, heads_, head_dim_}), k.reshape({n, kv_heads_, head_dim_}),
                 v.reshape({n, kv_heads_, head_dim_}), k_cache, v_cache, out, scale_);
  return out.reshape({n, heads_ * head_dim_});
}

}  // namespace opchain::nn
