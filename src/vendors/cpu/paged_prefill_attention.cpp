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
    seqs.push_back(s);
  }
  AttnJob job;
  job.q = a.q.data<float>();
  job.out = a.out.data<float>();
  job.hq = a.q.size(1);
  job.hk = a.k_cache.size(2);
  job.d = a.q.size(2);
  job.scale = a.scale;
  job.bf16_dots = a.precision != MatmulPrecision::F32;
  job.k = a.k_cache.raw();
  job.v = a.v_cache.raw();
  job.kv_dtype = a.k_cache.dtype();
  job.paged = true;
  job.block_size = a.k_cache.size(1);
  job.block_tables = m.block_tables.data<int32_t>();
  job.max_blocks = m.block_tables.size(1);
  attention(job, seqs.data(), static_cast<int64_t>(seqs.size()));
}

void register_paged_prefill_attention(Registry& reg) {
  add_kernel<OpType::PagedPrefillAttention>(reg, DType::F32, paged_prefill_attention);
  add_kernel<OpType::PagedPrefillAttention>(reg, DType::BF16, paged_prefill_attention);
}

}  // namespace opchain::cpu
