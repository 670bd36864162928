#include "vendors/reference/attention_common.h"

namespace opchain::reference {

static void paged_decode_attention(const PagedDecodeAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  std::vector<float> kbuf, vbuf;
  const int64_t hq = a.q.size(1), hk = a.k_cache.size(2), d = a.q.size(2), group = hq / hk;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t kv_len = m.kv_seqlens.data<int32_t>()[b];
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kvh = h / group;
      auto key = [&](int64_t p) { return paged_row(a.k_cache, m, b, p, kvh, kbuf); };
      auto value = [&](int64_t p) { return paged_row(a.v_cache, m, b, p, kvh, vbuf); };
      attend_one(a.q.data<float>() + (b * hq + h) * d, d, kv_len, a.scale, key, value,
                 a.out.data<float>() + (b * hq + h) * d);
    }
  }
}

void register_paged_decode_attention(Registry& reg) {
  reg.add<OpType::PagedDecodeAttention>(kReferenceVendor, DType::F32, paged_decode_attention,
                                        "reference::paged_decode_attention");
  reg.add<OpType::PagedDecodeAttention>(kReferenceVendor, DType::BF16, paged_decode_attention,
                                        "reference::paged_decode_attention");
}

}  // namespace opchain::reference
