#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// One query per sequence (row b of q) over its whole paged cache.
static void paged_decode_attention(const PagedDecodeAttentionArgs& a) {
  const AttnMetadata& m = *a.meta;
  thread_local std::vector<AttnSeq> seqs;
  seqs.clear();
  for (int64_t b = 0; b < m.batch_size; ++b) {
    AttnSeq s;
    s.q_row0 = b;
    s.q_len = 1;
    s.past = m.kv_seqlens.data<int32_t>()[b] - 1;
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
  job.k = a.k_cache.raw();
  job.v = a.v_cache.raw();
  job.kv_dtype = a.k_cache.dtype();
  job.paged = true;
  job.block_size = a.k_cache.size(1);
  job.block_tables = m.block_tables.data<int32_t>();
  job.max_blocks = m.block_tables.size(1);
  attention(job, seqs.data(), static_cast<int64_t>(seqs.size()));
}

void register_paged_decode_attention(Registry& reg) {
  add_kernel<OpType::PagedDecodeAttention>(reg, DType::F32, paged_decode_attention);
  add_kernel<OpType::PagedDecodeAttention>(reg, DType::BF16, paged_decode_attention);
}

}  // namespace opchain::cpu
