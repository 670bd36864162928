#include "vendors/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

constexpr int64_t kQueryTile = 16;     // queries of one sequence per work item
constexpr int64_t kKvChunk = 32;       // kv positions per online-softmax step (absolute: [32c, 32c + 32))
constexpr int64_t kMaxItemRows = 128;  // (query, head) rows per work item, bounding its state
constexpr int64_t kLanesMax = 16;      // score widths are padded to whole vectors of the widest ISA
static_assert(kKvChunk == dot_attention::kChunk, "Note [bf16 dot attention] takes attention()'s chunks");

// Row r of an item is (kv head hh = h0 + r / (nq * group), query i0 + (r / group) % nq, head h = r % group):
// each kv head's rows are contiguous. dot: the products on VDPBF16PS (Note [bf16 dot attention]).
void run_item(const SimdKernels& sk, const AttnJob& job, const AttnSeq& s, const AttnItem& it, bool dot) {
  const int64_t d = job.d, group = job.hq / job.hk, nq = it.i1 - it.i0, nh = it.h1 - it.h0;
  const int64_t head_rows = nq * group, rows = nh * head_rows;
  // Running max m, denominator l, numerator acc[d] and the chunk's scores of every row; q pointers.
  thread_local std::vector<float> state;
  thread_local std::vector<const float*> ptr_buf;
  float* st = scratch(state, static_cast<size_t>(rows * (d + 2 + kKvChunk)));
  float* m = st;
  float* l = st + rows;
  float* score = st + 2 * rows;          // [rows, kKvChunk]
  float* acc = score + rows * kKvChunk;  // [rows, d]
  const float** ptrs = scratch(ptr_buf, static_cast<size_t>(rows + 2 * kKvChunk));
  thread_local std::vector<float> kt_buf;  // the chunk's keys of one kv head, transposed: [d, kKvChunk]
  float* kt = scratch_aligned(kt_buf, static_cast<size_t>(d * kKvChunk));
  // The chunk's values of one kv head, contiguous (widened to f32 from a bf16 cache), and the keys' rows.
  const bool bf16 = job.kv_dtype == DType::BF16;
  const int64_t esize = bf16 ? 2 : 4;
  thread_local std::vector<float> vwide_buf;
  float* vwide = scratch_aligned(vwide_buf, static_cast<size_t>(kKvChunk * d));
  const void* krows[kKvChunk];
  const void* vrows[kKvChunk];
  auto at = [&](const void* base, int64_t offset) { return static_cast<const char*>(base) + offset * esize; };
  thread_local std::vector<float*> yrow_buf;
  float** yrows = scratch(yrow_buf, static_cast<size_t>(rows));
  const float** qrows = ptrs;
  const float** vp = ptrs + rows;
  // Row r sees kv positions [0, visible[r]); count[r] of them in the current chunk. Kept per row, not
  // recomputed from r: two integer divisions per row and chunk were ~6% of a long prompt's attention.
  thread_local std::vector<int64_t> visible_buf;
  int64_t* visible = scratch(visible_buf, static_cast<size_t>(2 * rows));
  int64_t* count = visible + rows;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t hh = it.h0 + r / head_rows, i = it.i0 + (r / group) % nq, h = r % group;
    visible[r] = s.past + i + 1;
    qrows[r] = job.q + ((s.q_row0 + i) * job.hq + hh * group + h) * d;
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }
  std::fill(acc, acc + rows * d, 0.0f);
  // The dot path's bf16 operands: the item's q rows, a chunk's keys and values of a kv f32 cache rounded,
  // the keys as [d/2][kKvChunk] pairs and the values as [kKvChunk/2][d] pairs (Note [bf16 dot attention]).
  thread_local std::vector<uint16_t> dot_buf;
  uint16_t *qb = nullptr, *kround = nullptr, *vround = nullptr;
  uint32_t *kpairs = nullptr, *vpairs = nullptr, *wpairs = nullptr;
  if (dot) {
    uint16_t* b = scratch_aligned(dot_buf, static_cast<size_t>((rows + 4 * kKvChunk) * d + rows * kKvChunk));
    qb = b;
    kround = qb + rows * d;
    vround = kround + kKvChunk * d;
    kpairs = reinterpret_cast<uint32_t*>(vround + kKvChunk * d);
    vpairs = kpairs + kKvChunk * d / 2;
    wpairs = vpairs + kKvChunk * d / 2;  // [rows][kKvChunk / 2]: a chunk's weights of every row
    dot_attention::round_rows(qrows, rows, d, qb);
  }

  const int64_t max_visible = s.past + it.i1;  // the last query's
  // Offsets of each chunk position's row (kv head 0; the same in the k and v caches), found once per
  // chunk: for the prefetch of the chunk, then for reading it (a division per position cost more than
  // the chunk's softmax at batch 1).
  int64_t base[kKvChunk], next_base[kKvChunk];
  auto chunk_offsets = [&](int64_t p0, int64_t* out) {
    const int64_t p1 = std::min(p0 + kKvChunk, max_visible), row_elems = job.hk * d;
    if (!job.paged) {
      for (int64_t p = p0; p < p1; ++p) out[p - p0] = (s.kv_row0 + p) * row_elems;
      return;
    }
    const int32_t* table = job.block_tables + s.b * job.max_blocks;
    int64_t blk = p0 / job.block_size, in_block = p0 % job.block_size;
    for (int64_t p = p0; p < p1; ++p) {
      out[p - p0] = (table[blk] * job.block_size + in_block) * row_elems;
      if (++in_block == job.block_size) {
        in_block = 0;
        ++blk;
      }
    }
  };
  // A position's rows of heads [h0, h1) are contiguous, but consecutive positions are hk * d floats
  // apart (a page apart in the paged layout once hk * d >= 1024): prefetch the next chunk meanwhile.
  auto prefetch_chunk = [&](int64_t p0, const int64_t* offs) {
    const int64_t p1 = std::min(p0 + kKvChunk, max_visible);
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t off = offs[p - p0] + it.h0 * d;
      for (int64_t c = 0; c < nh * d; c += 64 / esize) {
        __builtin_prefetch(at(job.k, off + c), 0, 3);
        __builtin_prefetch(at(job.v, off + c), 0, 3);
      }
    }
  };
  if (max_visible > 0) {
    chunk_offsets(0, next_base);
    prefetch_chunk(0, next_base);
  }
  for (int64_t p0 = 0; p0 < max_visible; p0 += kKvChunk) {
    const int64_t p1 = std::min(p0 + kKvChunk, max_visible);
    std::copy(next_base, next_base + (p1 - p0), base);
    if (p1 < max_visible) {
      chunk_offsets(p1, next_base);
      prefetch_chunk(p1, next_base);
    }
    // Queries that see this chunk at all are a suffix [first, i1) of the tile.
    int64_t first = it.i0;
    while (s.past + first + 1 <= p0) ++first;
    for (int64_t hh = it.h0; hh < it.h1; ++hh) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t j = p - p0, off = base[j] + hh * d;
        krows[j] = at(job.k, off);
        vrows[j] = at(job.v, off);
        if (dot) continue;
        // Values copied to one block, f32 ones too: in place, a chunk's rows lie hk * d floats apart
        // (2 KiB for 4 kv heads of 128), so the L1 sets they map to hold fewer of them than P @ V
        // rereads for every group of rows.
        float* vw = vwide + j * d;
        if (bf16)
          sk.widen_bf16(reinterpret_cast<const uint16_t*>(at(job.v, off)), vw, d);
        else
          std::memcpy(vw, at(job.v, off), static_cast<size_t>(d) * sizeof(float));
        vp[j] = vw;
      }
      // Scores for every position of the chunk (each one FMA chain over the head dim, whatever the
      // rows); positions a row must not see are left out below. Keys transposed once per chunk and kv
      // head serve all its rows; missing positions of a short last chunk are zero.
      const int64_t r0 = (hh - it.h0) * head_rows + (first - it.i0) * group, r1 = (hh - it.h0 + 1) * head_rows;
      if (dot) {
        if (!bf16) {
          dot_attention::round_rows(reinterpret_cast<const float* const*>(krows), p1 - p0, d, kround);
          dot_attention::round_rows(reinterpret_cast<const float* const*>(vrows), p1 - p0, d, vround);
          for (int64_t j = 0; j < p1 - p0; ++j) {
            krows[j] = kround + j * d;
            vrows[j] = vround + j * d;
          }
        }
        // A bf16 key row's 32-bit elements are its head-dim pairs: the f32 transpose moves them as they are.
        sk.transpose_keys(krows, DType::F32, p1 - p0, d / 2, reinterpret_cast<float*>(kpairs), kKvChunk);
        dot_attention::pack_values(reinterpret_cast<const uint16_t* const*>(vrows), p1 - p0, d, vpairs);
        dot_attention::scores(qb + r0 * d, r1 - r0, kpairs, d, score + r0 * kKvChunk, kKvChunk);
      } else {
        const int64_t width = (p1 - p0 + kLanesMax - 1) / kLanesMax * kLanesMax;
        sk.transpose_keys(krows, job.kv_dtype, p1 - p0, d, kt, width);
        sk.scores_block(qrows + r0, r1 - r0, kt, d, width, score + r0 * kKvChunk, kKvChunk);
      }
      for (int64_t r = r0; r < r1; ++r) count[r] = std::min(p1, visible[r]) - p0;
      if (dot) {
        uint32_t* w = wpairs + r0 * (kKvChunk / 2);
        dot_attention::softmax_weights(score + r0 * kKvChunk, kKvChunk, r1 - r0, count + r0, job.scale, m + r0, l + r0,
                                       acc + r0 * d, d, w);
        dot_attention::weighted_values(acc + r0 * d, r1 - r0, w, vpairs, d);
        continue;
      }
      sk.softmax_chunk_rows(score + r0 * kKvChunk, kKvChunk, r1 - r0, count + r0, job.scale, m + r0, l + r0,
                            acc + r0 * d, d);
      // P @ V, rows that see the same positions together (a query's heads always do; every row
      // does in chunks wholly in the past).
      for (int64_t r = r0; r < r1;) {
        const int64_t cnt = count[r];
        int64_t rend = r + 1;
        while (rend < r1 && count[rend] == cnt) ++rend;
        for (int64_t x = r; x < rend; ++x) yrows[x - r] = acc + x * d;
        sk.axpy_rows(yrows, rend - r, score + r * kKvChunk, kKvChunk, vp, cnt, d);
        r = rend;
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* out = job.out + (qrows[r] - job.q);
    const float* a = acc + r * d;
    if (l[r] > 0.0f) {
      for (int64_t c = 0; c < d; ++c) out[c] = a[c] / l[r];
    } else {  // no visible position: reference's empty softmax gives zeros
      std::fill(out, out + d, 0.0f);
    }
  }
}

}  // namespace

void add_attention_sequence(std::vector<AttnSeq>& seqs, const AttnSeq& s, const AttnMetadata& meta) {
  const int64_t from = meta.decoded_from.is_null() ? INT64_MAX : meta.decoded_from.data<int32_t>()[s.b];
  if (s.q_len <= 1 || s.past + s.q_len <= from) {
    seqs.push_back(s);
    return;
  }
  const int64_t prefilled = std::clamp<int64_t>(from - s.past, 0, s.q_len);
  if (prefilled > 0) {
    AttnSeq head = s;
    head.q_len = prefilled;
    seqs.push_back(head);
  }
  for (int64_t i = prefilled; i < s.q_len; ++i) {
    AttnSeq one = s;
    one.q_row0 = s.q_row0 + i;
    one.q_len = 1;
    one.past = s.past + i;
    seqs.push_back(one);
  }
}

AttnJob paged_attention_job(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                            float scale, const AttnMetadata& meta) {
  AttnJob job;
  job.q = q.data<float>();
  job.out = out.data<float>();
  job.hq = q.size(1);
  job.hk = k_cache.size(2);
  job.d = q.size(2);
  job.scale = scale;
  job.k = k_cache.raw();
  job.v = v_cache.raw();
  job.kv_dtype = k_cache.dtype();
  job.paged = true;
  job.block_size = k_cache.size(1);
  job.block_tables = meta.block_tables.data<int32_t>();
  job.max_blocks = meta.block_tables.size(1);
  return job;
}

void attention(const AttnJob& job, const AttnSeq* seqs, int64_t count) {
  if (job.hk <= 0 || job.hq <= 0 || job.d <= 0) return;
  thread_local std::vector<AttnSeq> single_buf;
  std::vector<AttnSeq>& single = single_buf;
  single.clear();
  for (int64_t i = 0; i < count; ++i)
    if (seqs[i].q_len == 1) single.push_back(seqs[i]);
  if (!single.empty()) decode_attention(job, single.data(), static_cast<int64_t>(single.size()));
  const SimdKernels& sk = simd();
  const int64_t group = job.hq / job.hk;
  // kv heads per item: all of them (each position's rows read contiguously) unless the pool needs more
  // items, or the item's state would grow past kMaxItemRows rows. The split never changes a result.
  int64_t tiles = 0, tile_q = 1;
  for (int64_t i = 0; i < count; ++i) {
    if (seqs[i].q_len == 1) continue;
    tiles += (seqs[i].q_len + kQueryTile - 1) / kQueryTile;
    tile_q = std::max(tile_q, std::min(seqs[i].q_len, kQueryTile));
  }
  const int64_t threads = ThreadPool::global().num_threads();
  const int64_t split =
      std::clamp<int64_t>((2 * threads + std::max<int64_t>(tiles, 1) - 1) / std::max<int64_t>(tiles, 1), 1, job.hk);
  const int64_t heads_per_item =
      std::max<int64_t>(1, std::min((job.hk + split - 1) / split, kMaxItemRows / (tile_q * group)));

  thread_local std::vector<AttnItem> items_buf;
  thread_local std::vector<int64_t> cost_buf;
  std::vector<AttnItem>& items = items_buf;  // the calling thread's, shared with the workers below
  std::vector<int64_t>& cost_before = cost_buf;
  items.clear();
  cost_before.clear();
  int64_t total = 0;
  for (int64_t sidx = 0; sidx < count; ++sidx) {
    const AttnSeq& s = seqs[sidx];
    if (s.q_len == 1) continue;  // decode_attention's, above
    for (int64_t h0 = 0; h0 < job.hk; h0 += heads_per_item) {
      const int64_t h1 = std::min(h0 + heads_per_item, job.hk);
      for (int64_t i0 = 0; i0 < s.q_len; i0 += kQueryTile) {
        const int64_t i1 = std::min(i0 + kQueryTile, s.q_len);
        cost_before.push_back(total);
        // the tile's queries' visible positions, times heads and head dim
        const int64_t visible_sum = (i1 - i0) * s.past + (i0 + 1 + i1) * (i1 - i0) / 2;
        total += std::max<int64_t>(visible_sum, 1) * (h1 - h0) * group * (job.d + 8);
        items.push_back(AttnItem{sidx, h0, h1, i0, i1});
      }
    }
  }
  if (items.empty()) return;
  if (amx_attention_applies(job)) {
    amx_attention(job, seqs, count, items, cost_before, total);
    return;
  }
  const bool dot = dot_attention_applies(job);
  parallel_balanced(cost_before, total, [&](size_t i) { run_item(sk, job, seqs[items[i].seq], items[i], dot); });
}

}  // namespace opchain::cpu
