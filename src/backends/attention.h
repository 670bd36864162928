#pragma once
// The default attention impl: one nn Attention call is up to two registry ops per step —
// fill_kv_cache, then the attention kernel the step metadata asks for: decode, prefill over the
// cache, or plain prefill over the fresh keys when no sequence has cached context and the cache holds
// them exactly (an f32 cache; Note [KV cache dtype]).
#include "backends/op_impl.h"

namespace opchain {

class DefaultAttentionImpl final : public AttentionImpl {
 public:
  DefaultAttentionImpl(const OpsBackend& backend, const ImplBuildParams& p);
  void forward(const StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
               const Tensor& v_cache, const Tensor& out, float scale) const override;

 private:
  std::unique_ptr<KernelImpl<OpType::FillKvCache>> fill_;
  std::unique_ptr<KernelImpl<OpType::PrefillAttention>> prefill_;
  std::unique_ptr<KernelImpl<OpType::PagedPrefillAttention>> paged_prefill_;
  std::unique_ptr<KernelImpl<OpType::PagedDecodeAttention>> decode_;
  MatmulPrecision precision_;  // prefill's; decode attention is f32 at every precision
};

}  // namespace opchain
