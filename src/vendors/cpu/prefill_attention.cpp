#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// Causal self-attention of each sequence's new tokens (no cache): query i sees keys [0, i].
static void prefill_attention(const PrefillAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  thread_local std::vector<AttnSeq> seqs;
  seqs.clear();
  for (int64_t b = 0; b < m.batch_size; ++b) {
    AttnSeq s;
    s.q_row0 = s.kv_row0 = m.q_start_loc.data<int32_t>()[b];
    s.q_len = m.q_seqlens.data<int32_t>()[b];
    s.past = 0;
    s.b = b;
    add_attention_sequence(seqs, s, m);
  }
  AttnJob job;
  job.q = a.q.data<float>();
  job.out = a.out.data<float>();
  job.hq = a.q.size(1);
  job.hk = a.k.size(1);
  job.d = a.q.size(2);
  job.scale = a.scale;
  job.bf16_dots = a.precision != MatmulPrecision::F32;
  job.k = a.k.data<float>();
  job.v = a.v.data<float>();
  attention(job, seqs.data(), static_cast<int64_t>(seqs.size()));
}

void register_prefill_attention(Registry& reg) {
  add_kernel<OpType::PrefillAttention>(reg, DType::F32, prefill_attention);
}

}  // namespace opchain::cpu
