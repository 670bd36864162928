#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// New tokens over the paged cache (cached context + themselves, already written by fill_kv_cache).
static void paged_prefill_attention(const PagedPrefillAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  thread_local std::vector<AttnSeq> seqs;
  seqs.clear();
  for (int64_t b = 0; b < m.batch_size; ++b) {
    AttnSeq s;
    s.q_row0 = m.q_start_loc.data<int32_t>()[b];
    s.q_len = m.q_seqlens.data<int32_t>()[b];
    s.past = m.kv_seqlens.data<int32_t>()[b] - s.q_len;
    s.b = b;
    add_attention_sequence(seqs, s, m);
  }
  AttnJob job = paged_attention_job(a.q, a.k_cache, a.v_cache, a.out, a.scale, m);
  job.bf16_dots = a.precision != MatmulPrecision::F32;
  attention(job, seqs.data(), static_cast<int64_t>(seqs.size()));
}

void register_paged_prefill_attention(Registry& reg) {
  add_kernel<OpType::PagedPrefillAttention>(reg, DType::F32, paged_prefill_attention);
  add_kernel<OpType::PagedPrefillAttention>(reg, DType::BF16, paged_prefill_attention);
}

}  // namespace opchain::cpu
