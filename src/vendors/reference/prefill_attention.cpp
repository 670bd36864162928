#include "vendors/reference/attention_common.h"

namespace opchain::reference {

static void prefill_attention(const PrefillAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  const int64_t hq = a.q.size(1), hk = a.k.size(1), d = a.q.size(2), group = hq / hk;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t kvh = h / group;
        auto key = [&](int64_t p) { return a.k.data<float>() + ((start + p) * hk + kvh) * d; };
        auto value = [&](int64_t p) { return a.v.data<float>() + ((start + p) * hk + kvh) * d; };
        attend_one(a.q.data<float>() + ((start + i) * hq + h) * d, d, i + 1, a.scale, key, value,
                   a.out.data<float>() + ((start + i) * hq + h) * d);
      }
    }
  }
}

void register_prefill_attention(Registry& reg) {
  reg.add<OpType::PrefillAttention>(kReferenceVendor, DType::F32, prefill_attention, "reference::prefill_attention");
}

}  // namespace opchain::reference
