#include "backends/attention.h"

namespace opchain {

DefaultAttentionImpl::DefaultAttentionImpl(const OpsBackend& backend, const ImplBuildParams& p)
    : precision_(p.precision) {
  site_ = TraceSite{p.module_path, p.nn_module, "DefaultAttentionImpl"};
  fill_ = std::make_unique<KernelImpl<OpType::FillKvCache>>(backend, p, "DefaultAttentionImpl.fill_kv_cache");
  prefill_ = std::make_unique<KernelImpl<OpType::PrefillAttention>>(backend, p, "DefaultAttentionImpl.prefill");
  paged_prefill_ =
      std::make_unique<KernelImpl<OpType::PagedPrefillAttention>>(backend, p, "DefaultAttentionImpl.paged_prefill");
  decode_ = std::make_unique<KernelImpl<OpType::PagedDecodeAttention>>(backend, p, "DefaultAttentionImpl.decode");
}

void DefaultAttentionImpl::forward(const StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& k_cache, const Tensor& v_cache, const Tensor& out, float scale) const {
  (*fill_)(FillKvCacheArgs{k, v, k_cache, v_cache, &ctx.attn});
  if (ctx.attn.is_decoding) {
    (*decode_)(PagedDecodeAttentionArgs{q, k_cache, v_cache, out, scale, &ctx.attn});
  } else if (ctx.attn.has_past || k_cache.dtype() != k.dtype()) {
    // A cache that rounds what it stores (Note [KV cache dtype]) is read by every prompt, fresh or not:
    // a sequence's attention then sees the same keys whether or not a batch-mate has cached context.
    (*paged_prefill_)(PagedPrefillAttentionArgs{q, k_cache, v_cache, out, scale, &ctx.attn, precision_});
  } else {
    (*prefill_)(PrefillAttentionArgs{q, k, v, out, scale, &ctx.attn, precision_});
  }
}

}  // namespace opchain
