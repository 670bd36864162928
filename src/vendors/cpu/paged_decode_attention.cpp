#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

// Note [decode attention]: one query per sequence, so no query tile amortises a transposed copy of the
// keys (prefill's path, attention.cpp): per cached element and query head there are two FMAs, and the
// cache is read once. Per kv head and chunk of kDecodeChunk positions (absolute multiples):
//  - scores: the chunk's keys are widened to f32 rows; lane h * B + b of a vector holds query head h and
//    head-dim element b of each group of B, so an FMA against B key elements broadcast from memory
//    serves H = kLanes / B heads at once (decode_attention_impl.inc, scores());
//  - an online-softmax step per head (m, l, alpha), in that lane layout;
//  - P @ V with the values widened in registers, one FMA chain in position order per element;
//  - meanwhile the next kv head's rows are prefetched, a line per inner-loop step.
// The kv axis is cut at fixed absolute boundaries, multiples of kSegment: each segment's state (m, l,
// unnormalised numerator) is computed alone and the segments are merged in order; a sequence of one
// segment is normalised directly. So every output element is one fixed sequence of float operations of
// its own sequence's query, cache and length: never of the batch, the item split (kv heads per item) or
// the thread count (Note [cpu kernels]); the segments let a short batch spread over many threads.

namespace {

constexpr int64_t kSegment = 1024;  // kv positions per segment: [1024 s, 1024 s + 1024)
static_assert(kSegment % kDecodeChunk == 0);

struct Item {
  int64_t b, seg, h0, h1;  // index into the call's sequences, segment, kv heads [h0, h1)
};

int64_t segments(int64_t len) { return std::max<int64_t>(1, (len + kSegment - 1) / kSegment); }

}  // namespace

void decode_attention(const AttnJob& job, const AttnSeq* seqs, int64_t count) {
  const int64_t hq = job.hq, hk = job.hk, d = job.d;
  if (count <= 0 || hq <= 0 || hk <= 0 || d <= 0) return;
  const int64_t g = hq / hk;
  auto kv_len = [&](int64_t i) { return seqs[i].past + 1; };
  const SimdKernels& sk = simd();

  // Partial states of sequences of several segments: per segment, m [hq], l [hq], numerator [hq, d].
  thread_local std::vector<int64_t> part_at;
  int64_t* part = scratch(part_at, static_cast<size_t>(count));
  int64_t pairs = 0, part_floats = 0, merged = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t segs = segments(kv_len(i));
    pairs += segs;
    part[i] = segs > 1 ? part_floats : -1;
    if (segs > 1) {
      part_floats += segs * hq * (d + 2);
      ++merged;
    }
  }
  thread_local std::vector<float> part_buf;
  float* partial = scratch(part_buf, static_cast<size_t>(part_floats));

  // kv heads per item: all of them (a position's rows read contiguously) unless the pool needs more
  // items. The split never changes a result.
  const int64_t threads = ThreadPool::global().num_threads();
  const int64_t split = std::clamp<int64_t>((2 * threads + pairs - 1) / pairs, 1, hk);
  const int64_t heads_per_item = (hk + split - 1) / split;
  thread_local std::vector<Item> items_buf;
  std::vector<Item>& items = items_buf;  // the calling thread's, shared with the workers below
  items.clear();
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t seg = 0; seg < segments(kv_len(i)); ++seg) {
      const int64_t len = std::min<int64_t>(kSegment, kv_len(i) - seg * kSegment);
      for (int64_t h0 = 0; h0 < hk; h0 += heads_per_item) {
        const int64_t h1 = std::min(h0 + heads_per_item, hk);
        total += std::max<int64_t>(len, 1) * (h1 - h0) * g * (2 * d + 16);
        items.push_back(Item{i, seg, h0, h1});
      }
    }

  // Contiguous keys and values (a prompt of one token): one "block" holding the whole sequence.
  static constexpr int32_t kWholeSequence[1] = {0};
  const int64_t esize = job.kv_dtype == DType::BF16 ? 2 : 4;
  // Items from a shared counter: a memory-bound item's time is not its size (Note [cpu kernels]).
  parallel_dynamic(items.size(), total, [&](size_t n) {
    const Item& it = items[n];
    const AttnSeq& s = seqs[it.b];
    const int64_t rows = (it.h1 - it.h0) * g, row0 = s.q_row0 * hq + it.h0 * g;
    DecodeSpan sp;
    sp.q = job.q + row0 * d;
    sp.scale = job.scale;
    sp.g = g;
    sp.d = d;
    sp.h0 = it.h0;
    sp.h1 = it.h1;
    sp.kv_dtype = job.kv_dtype;
    sp.row_elems = hk * d;
    if (job.paged) {
      sp.k = job.k;
      sp.v = job.v;
      sp.block_table = job.block_tables + s.b * job.max_blocks;
      sp.block_size = job.block_size;
    } else {
      sp.k = static_cast<const char*>(job.k) + s.kv_row0 * sp.row_elems * esize;
      sp.v = static_cast<const char*>(job.v) + s.kv_row0 * sp.row_elems * esize;
      sp.block_table = kWholeSequence;
      sp.block_size = std::max<int64_t>(kv_len(it.b), 1);
    }
    sp.p0 = it.seg * kSegment;
    sp.p1 = std::min<int64_t>(sp.p0 + kSegment, kv_len(it.b));
    if (part[it.b] >= 0) {  // one segment of several: its state, merged below
      float* base = partial + part[it.b] + it.seg * hq * (d + 2);
      sp.m = base + it.h0 * g;
      sp.l = base + hq + it.h0 * g;
      sp.acc = base + 2 * hq + it.h0 * g * d;
      sk.decode_attention(sp);
      return;
    }
    thread_local std::vector<float> state;
    float* st = scratch(state, static_cast<size_t>(rows * (d + 2)));
    sp.m = st;
    sp.l = st + rows;
    sp.acc = st + 2 * rows;
    sk.decode_attention(sp);
    for (int64_t r = 0; r < rows; ++r) {
      float* o = job.out + (row0 + r) * d;
      const float* acc = sp.acc + r * d;
      if (sp.l[r] > 0.0f) {
        for (int64_t c = 0; c < d; ++c) o[c] = acc[c] / sp.l[r];
      } else {  // no visible position: reference's empty softmax gives zeros
        std::fill(o, o + d, 0.0f);
      }
    }
  });
  if (merged == 0) return;

  // Segments merged in order: m = max m_s, then l and the numerator summed with weights exp(m_s - m).
  thread_local std::vector<int64_t> merge_buf;
  int64_t* several = scratch(merge_buf, static_cast<size_t>(merged));
  for (int64_t i = 0, n = 0; i < count; ++i)
    if (part[i] >= 0) several[n++] = i;
  parallel_rows(merged * hq, segments(kv_len(several[0])) * d * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = several[r / hq], h = r % hq, segs = segments(kv_len(i));
      const float* base = partial + part[i];
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t s = 0; s < segs; ++s) m = std::max(m, base[s * hq * (d + 2) + h]);
      float l = 0.0f;
      float* o = job.out + (seqs[i].q_row0 * hq + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t s = 0; s < segs; ++s) {
        const float* seg = base + s * hq * (d + 2);
        const float w = std::exp(seg[h] - m);
        l += seg[hq + h] * w;
        const float* acc = seg + 2 * hq + h * d;
        for (int64_t c = 0; c < d; ++c) o[c] += acc[c] * w;
      }
      for (int64_t c = 0; c < d; ++c) o[c] /= l;
    }
  });
}

static void paged_decode_attention(const PagedDecodeAttentionArgs& a) {
  const AttnMetadata& meta = *a.meta;
  const int32_t* lens = meta.kv_seqlens.data<int32_t>();
  thread_local std::vector<AttnSeq> seqs;
  seqs.clear();
  for (int64_t b = 0; b < meta.batch_size; ++b) {
    AttnSeq s;
    s.q_row0 = s.b = b;
    s.q_len = 1;
    s.past = lens[b] - 1;
    seqs.push_back(s);
  }
  const AttnJob job = paged_attention_job(a.q, a.k_cache, a.v_cache, a.out, a.scale, meta);
  decode_attention(job, seqs.data(), static_cast<int64_t>(seqs.size()));
}

void register_paged_decode_attention(Registry& reg) {
  add_kernel<OpType::PagedDecodeAttention>(reg, DType::F32, paged_decode_attention);
  add_kernel<OpType::PagedDecodeAttention>(reg, DType::BF16, paged_decode_attention);
}

}  // namespace opchain::cpu
