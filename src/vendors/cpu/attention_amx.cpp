// Note [AMX attention]: prefill attention on TDPBF16PS (Note [AMX tier], amx.h). At a matmul precision
// other than F32 (Note [Matmul precision]) a prefill's q . k and p . v may take bf16 inputs; on
// Isa::Amx, for a head dim that is a multiple of 32, both products of every chunk run on the tiles:
// at 4096 tokens the f32 loops of attention.cpp were ~60% of a prefill, at half the FMA peak.
//
// Per call, each sequence's keys and values are rounded to bf16 (RNE; a bf16 cache is copied) into
// panels of 64 absolute kv positions per kv head, already in tile order: a key panel is 16 (d/32 x 4)
// B tiles whose column n is position 16 * nt + n and whose row r holds head dims (32 ks + 2r, +1); a
// value panel is (2 x d/16) B tiles whose row r holds positions (32 ks + 2r, +1) of head dims
// 16 dt + n. Positions past the sequence's end are zero. A work item (as attention.cpp makes them)
// rounds its query rows to bf16 once; per chunk and kv head, the scores of its rows are C tiles
// (2 row blocks x 2 position tiles at a time), the online-softmax update is the f32 path's own
// (softmax_chunk_rows), the weights are rounded to bf16 with the positions a row must not see zeroed,
// and P @ V lands in C tiles that are added to the row's f32 numerator.
//
// Batch invariance (Note [cpu kernels]) holds as on the f32 path: chunks are absolute, every C element
// is its own row's product over the whole chunk in a fixed k order, and a chunk's P @ V takes one or
// two k steps by the sequence's length alone, never the item's. The results differ from the f32
// path's (and the reference's) by the rounding of q, k, v and p to bf16: 3-5e-3 of 1 + |out| at most
// on the kernel harness's random inputs, checked there at 1e-2.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/dtype.h"
#include "vendors/cpu/amx.h"
#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

constexpr int64_t kChunk = 64;  // kv positions per online-softmax step: absolute [64c, 64c + 64)
constexpr int64_t kTile = 512;  // bf16 per tile: 16 rows x 32
constexpr int64_t kBlock = 16;  // rows per tile

int64_t panel_elems(int64_t d) { return 2 * kChunk * d; }  // a key panel, then its value panel

// Panels of chunk c, kv head hh of sequence s, at `kp` (panel_elems(d) bf16).
void pack_panel(const AttnJob& job, const AttnSeq& s, int64_t c, int64_t hh, uint16_t* kp) {
  const int64_t d = job.d, p0 = c * kChunk, n = std::min(kChunk, s.past + s.q_len - p0);
  uint16_t* vp = kp + kChunk * d;
  std::memset(kp, 0, static_cast<size_t>(panel_elems(d)) * sizeof(uint16_t));
  thread_local std::vector<uint16_t> row_buf;
  uint16_t* rounded = scratch(row_buf, static_cast<size_t>(2 * d));
  const int64_t row_elems = job.hk * d, vtiles = d / 16;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = p0 + j;
    int64_t row = s.kv_row0 + p;
    if (job.paged)
      row = int64_t{job.block_tables[s.b * job.max_blocks + p / job.block_size]} * job.block_size + p % job.block_size;
    const int64_t off = row * row_elems + hh * d;
    const uint16_t* kr = rounded;
    const uint16_t* vr = rounded + d;
    if (job.kv_dtype == DType::BF16) {
      kr = static_cast<const uint16_t*>(job.k) + off;
      vr = static_cast<const uint16_t*>(job.v) + off;
    } else {
      const float* kf = static_cast<const float*>(job.k) + off;
      const float* vf = static_cast<const float*>(job.v) + off;
      for (int64_t e = 0; e < d; ++e) {
        rounded[e] = f32_to_bf16(kf[e]);
        rounded[d + e] = f32_to_bf16(vf[e]);
      }
    }
    const int64_t nt = j / 16, col = j % 16;
    for (int64_t e = 0; e < d; ++e) kp[(e / 32 * 4 + nt) * kTile + (e % 32) / 2 * 32 + col * 2 + (e & 1)] = kr[e];
    const int64_t vrow = (j / 32) * vtiles * kTile + (j % 32) / 2 * 32 + (j & 1);
    for (int64_t e = 0; e < d; ++e) vp[vrow + e / 16 * kTile + e % 16 * 2] = vr[e];
  }
}

}  // namespace

bool amx_attention_applies(const AttnJob& job) {
  return job.bf16_dots && job.d % 32 == 0 && active_isa() == Isa::Amx && amx_supported();
}

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
namespace {

inline __mmask16 first_n(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// C tiles (rb, j), rb < RB, j < 2 (tmm0..3): the sum over k steps ks of A row block rb (16 rows of
// 32 bf16 at a + rb * 16 * lda + 32 ks) times B tile (ks, j) at b + (ks * b_step + j) * kTile;
// stored as f32 at c + rb * 16 * ldc + 16 j.
template <int RB>
inline void tile_block(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t b_step, int64_t ksteps, float* c,
                       int64_t ldc) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (RB == 2) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t ks = 0; ks < ksteps; ++ks) {
    const uint16_t* bk = b + ks * b_step * kTile;
    _tile_loadd(4, a + ks * 32, lda * 2);
    _tile_loadd(6, bk, 64);
    _tile_loadd(7, bk + kTile, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (RB == 2) {
      _tile_loadd(5, a + kBlock * lda + ks * 32, lda * 2);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, ldc * 4);
  _tile_stored(1, c + 16, ldc * 4);
  if constexpr (RB == 2) {
    _tile_stored(2, c + kBlock * ldc, ldc * 4);
    _tile_stored(3, c + kBlock * ldc + 16, ldc * 4);
  }
}

// Rows [rb0, rows16) of A against column tiles [0, cols) of B (pairs; an odd last one pairs with a
// tile that may hold anything finite), in blocks of 32 rows.
inline void tile_rows(const uint16_t* a, int64_t lda, int64_t rb0, int64_t rows16, const uint16_t* b, int64_t b_step,
                      int64_t cols, int64_t ksteps, float* c, int64_t ldc) {
  for (int64_t rb = rb0; rb < rows16; rb += 2 * kBlock) {
    for (int64_t j = 0; j < cols; j += 2) {
      if (rows16 - rb >= 2 * kBlock)
        tile_block<2>(a + rb * lda, lda, b + j * kTile, b_step, ksteps, c + rb * ldc + j * 16, ldc);
      else
        tile_block<1>(a + rb * lda, lda, b + j * kTile, b_step, ksteps, c + rb * ldc + j * 16, ldc);
    }
  }
}

// Row r of an item as in attention.cpp: kv head h0 + r / head_rows, query i0 + (r % head_rows) / group.
// Each kv head's rows are padded to whole row blocks (rows16) in the bf16 query and weight buffers.
void run_item(const SimdKernels& sk, const AttnJob& job, const AttnSeq& s, const AttnItem& it, const uint16_t* panels) {
  const int64_t d = job.d, group = job.hq / job.hk, nq = it.i1 - it.i0, nh = it.h1 - it.h0;
  const int64_t head_rows = nq * group, rows = nh * head_rows, rows16 = (head_rows + kBlock - 1) / kBlock * kBlock;
  thread_local std::vector<float> state_buf, score_buf, tmp_buf;
  float* m = scratch(state_buf, static_cast<size_t>(rows * (d + 2)));
  float* l = m + rows;
  float* acc = l + rows;                                                            // [rows, d]
  float* score = scratch_aligned(score_buf, static_cast<size_t>(rows16 * kChunk));  // [rows16, kChunk]
  float* pv = scratch_aligned(tmp_buf, static_cast<size_t>(rows16 * d));            // [rows16, d]
  thread_local std::vector<uint16_t> qb_buf, pb_buf;
  uint16_t* qb = scratch_aligned(qb_buf, static_cast<size_t>(nh * rows16 * d));  // [nh, rows16, d]
  uint16_t* pb = scratch_aligned(pb_buf, static_cast<size_t>(rows16 * kChunk));  // [rows16, kChunk]
  thread_local std::vector<int64_t> index_buf;
  int64_t* visible = scratch(index_buf, static_cast<size_t>(3 * rows));
  int64_t* count = visible + rows;
  int64_t* q_off = count + rows;  // the row's offset in q and out
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t hh = it.h0 + r / head_rows, x = r % head_rows, i = it.i0 + x / group;
    visible[r] = s.past + i + 1;
    q_off[r] = ((s.q_row0 + i) * job.hq + hh * group + x % group) * d;
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
    uint16_t* qr = qb + ((r / head_rows) * rows16 + x) * d;
    for (int64_t e = 0; e < d; ++e) qr[e] = f32_to_bf16(job.q[q_off[r] + e]);
  }
  for (int64_t hh = 0; hh < nh; ++hh)
    std::memset(qb + (hh * rows16 + head_rows) * d, 0, static_cast<size_t>((rows16 - head_rows) * d) * 2);
  std::fill(acc, acc + rows * d, 0.0f);
  amx_configure(amx_full_tiles());

  const int64_t max_visible = s.past + it.i1, seq_len = s.past + s.q_len;
  for (int64_t c = 0; c * kChunk < max_visible; ++c) {
    const int64_t p0 = c * kChunk, p1 = std::min(p0 + kChunk, max_visible);
    const int64_t score_tiles = (p1 - p0 + 15) / 16;
    // Weights past the sequence's end are zero, so one k step serves a chunk of at most 32 positions.
    const int64_t pv_steps = std::min(p0 + kChunk, seq_len) - p0 > 32 ? 2 : 1;
    // Queries that see the chunk are [first, i1): visible past + i + 1 > p0.
    const int64_t first = std::max(it.i0, p0 - s.past);
    const int64_t x0 = (first - it.i0) * group, rb0 = x0 / kBlock * kBlock;
    for (int64_t hh = 0; hh < nh; ++hh) {
      const uint16_t* kp = panels + (c * job.hk + it.h0 + hh) * panel_elems(d);
      const uint16_t* vp = kp + kChunk * d;
      const int64_t r0 = hh * head_rows + x0;  // the item's first row seeing the chunk
      amx_compiler_barrier();
      tile_rows(qb + hh * rows16 * d, d, rb0, rows16, kp, 4, score_tiles, d / 32, score, kChunk);
      amx_compiler_barrier();
      for (int64_t r = r0; r < (hh + 1) * head_rows; ++r) count[r] = std::min(p1, visible[r]) - p0;
      sk.softmax_chunk_rows(score + x0 * kChunk, kChunk, head_rows - x0, count + r0, job.scale, m + r0, l + r0,
                            acc + r0 * d, d);
      for (int64_t x = rb0; x < rows16; ++x) {
        const float* sr = score + x * kChunk;
        const int64_t cnt = x >= x0 && x < head_rows ? count[hh * head_rows + x] : 0;
        __m512 w[4];
        for (int q = 0; q < 4; ++q) w[q] = _mm512_maskz_loadu_ps(first_n(cnt - 16 * q), sr + 16 * q);
        _mm512_store_si512(pb + x * kChunk, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(w[1], w[0])));
        _mm512_store_si512(pb + x * kChunk + 32, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(w[3], w[2])));
      }
      amx_compiler_barrier();
      tile_rows(pb, kChunk, rb0, rows16, vp, d / 16, d / 16, pv_steps, pv, d);
      amx_compiler_barrier();
      for (int64_t x = x0; x < head_rows; ++x) {
        float* a = acc + (hh * head_rows + x) * d;
        const float* t = pv + x * d;
        for (int64_t e = 0; e < d; e += 16)
          _mm512_storeu_ps(a + e, _mm512_add_ps(_mm512_loadu_ps(a + e), _mm512_loadu_ps(t + e)));
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* out = job.out + q_off[r];
    const float* a = acc + r * d;
    if (l[r] > 0.0f) {
      for (int64_t e = 0; e < d; ++e) out[e] = a[e] / l[r];
    } else {  // no visible position: the reference's empty softmax gives zeros
      std::fill(out, out + d, 0.0f);
    }
  }
}

}  // namespace

void amx_attention(const AttnJob& job, const AttnSeq* seqs, int64_t count, const std::vector<AttnItem>& items,
                   const std::vector<int64_t>& cost_before, int64_t total) {
  // Panels of every sequence, built once per call: each is read by every query tile of its sequence.
  thread_local std::vector<int64_t> first_chunk_buf;
  int64_t* first_chunk = scratch(first_chunk_buf, static_cast<size_t>(count + 1));
  first_chunk[0] = 0;
  for (int64_t i = 0; i < count; ++i)
    first_chunk[i + 1] = first_chunk[i] + (seqs[i].past + seqs[i].q_len + kChunk - 1) / kChunk;
  const int64_t panels_n = first_chunk[count] * job.hk, elems = panel_elems(job.d);
  thread_local std::vector<uint16_t> panel_buf;
  uint16_t* panels = scratch_aligned(panel_buf, static_cast<size_t>(panels_n * elems));
  parallel_rows(panels_n, elems, [&](int64_t b, int64_t e) {
    for (int64_t idx = b; idx < e; ++idx) {
      const int64_t g = idx / job.hk, hh = idx % job.hk;
      const int64_t sidx = std::upper_bound(first_chunk, first_chunk + count + 1, g) - first_chunk - 1;
      pack_panel(job, seqs[sidx], g - first_chunk[sidx], hh, panels + idx * elems);
    }
  });
  const SimdKernels& sk = simd();
  parallel_balanced(cost_before, total, [&](size_t i) {
    const AttnItem& it = items[i];
    run_item(sk, job, seqs[it.seq], it, panels + first_chunk[it.seq] * job.hk * elems);
  });
}

OPCHAIN_TARGET_END()
#else
void amx_attention(const AttnJob&, const AttnSeq*, int64_t, const std::vector<AttnItem>&, const std::vector<int64_t>&,
                   int64_t) {
  throw std::logic_error("amx_attention: AMX exists on x86 only; amx_attention_applies() is false here");
}
#endif

}  // namespace opchain::cpu
