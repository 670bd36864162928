#pragma once
#include "backends/op_impl.h"
#include "nn/module.h"

namespace opchain::nn {

// Paged attention over one layer's KV cache: writes the step's k/v into the cache, then attends.
class Attention {
 public:
  Attention(const ModuleContext& mc, int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, float scale);
  // q [n, hq*d], k/v [n, hk*d] -> out [n, hq*d].
  Tensor forward(StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                 const Tensor& v_cache) const;

 private:
  int64_t heads_, kv_heads_, head_dim_;
  float scale_;
  std::unique_ptr<OpImpl<OpType::PagedDecodeAttention>> impl_;
};

}  // namespace opchain::nn
