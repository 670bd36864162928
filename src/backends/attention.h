#pragma once
// The attention impl: one nn Attention call is up to two registry ops per step — fill_kv_cache, then
// the attention kernel the step metadata asks for (decode, prefill over the cache, or plain prefill
// when no sequence has cached context).
#include "backends/op_impl.h"

namespace opchain {

class AttentionImpl : public OpImplBase {
 public:
  AttentionImpl(const OpsBackend& backend, const ImplBuildParams& p);
  // q [n, hq, d], k/v [n, hk, d]; caches [blocks, block_size, hk, d]; out [n, hq, d].
  void forward(const StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
               const Tensor& v_cache, const Tensor& out, float scale) const;

 private:
  std::unique_ptr<KernelImpl<OpType::FillKvCache>> fill_;
  std::unique_ptr<KernelImpl<OpType::PrefillAttention>> prefill_;
  std::unique_ptr<KernelImpl<OpType::PagedPrefillAttention>> paged_prefill_;
  std::unique_ptr<KernelImpl<OpType::PagedDecodeAttention>> decode_;
};

}  // namespace opchain
