#include "vendors/reference/attention_common.h"

namespace opchain::reference {

static void paged_prefill_attention(const PagedPrefillAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  std::vector<float> kbuf, vbuf;
  const int64_t hq = a.q.size(1), hk = a.k_cache.size(2), d = a.q.size(2), group = hq / hk;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    const int64_t kv_len = m.kv_seqlens.data<int32_t>()[b], past = kv_len - len;
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t kvh = h / group;
        auto key = [&](int64_t p) { return paged_row(a.k_cache, m, b, p, kvh, kbuf); };
        auto value = [&](int64_t p) { return paged_row(a.v_cache, m, b, p, kvh, vbuf); };
        attend_one(a.q.data<float>() + ((start + i) * hq + h) * d, d, past + i + 1, a.scale, key, value,
                   a.out.data<float>() + ((start + i) * hq + h) * d);
      }
    }
  }
}

void register_paged_prefill_attention(Registry& reg) {
  reg.add<OpType::PagedPrefillAttention>(kReferenceVendor, DType::F32, paged_prefill_attention,
                                         "reference::paged_prefill_attention");
  reg.add<OpType::PagedPrefillAttention>(kReferenceVendor, DType::BF16, paged_prefill_attention,
                                         "reference::paged_prefill_attention");
}

}  // namespace opchain::reference
