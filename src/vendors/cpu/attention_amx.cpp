// Note [AMX attention]: prefill attention on TDPBF16PS (Note [AMX tier], amx.h). At a matmul precision
// other than F32 (Note [Matmul precision]) a prefill's q . k and p . v may take bf16 inputs; on
// Isa::Amx, for a head dim that is a multiple of 32, both products of every chunk run on the tiles:
// at 4096 tokens the f32 loops of attention.cpp were ~60% of a prefill, at half the FMA peak.
//
// Per call, each sequence's keys and values are rounded to bf16 (RNE; a bf16 cache is copied) into
// panels of 128 absolute kv positions per kv head, already in tile order: a key panel is (d/32 x 8)
// B tiles whose column n is position 16 * nt + n and whose row r holds head dims (32 ks + 2r, +1); a
// value panel is (4 x d/16) B tiles whose row r holds positions (32 ks + 2r, +1) of head dims
// 16 dt + n. Positions past the sequence's end are zero. A work item (as attention.cpp makes them)
// rounds its query rows to bf16 once; per chunk and kv head, the scores of its rows are C tiles
// (2 row blocks x 2 position tiles at a time); the online-softmax step runs on 16 rows at once
// (softmax_block: the rows' maxima and sums reduced together, the weights rounded to bf16 with the
// positions a row must not see zeroed); P @ V accumulates onto the rows' f32 numerators, loaded into
// the C tiles and stored back.
//
// Batch invariance (Note [cpu kernels]) holds as on the f32 path: chunks are absolute, every C element
// is its own row's product over the whole chunk in a fixed k order, a vector lane never mixes rows, and
// a chunk's P @ V takes one to four k steps by the sequence's length alone, never the item's. The
// results differ from the f32 path's (and the reference's) by the rounding of q, k, v and p to bf16:
// 3-5e-3 of 1 + |out| at most on the kernel harness's random inputs, checked there at 1e-2.
//
// Where the time went (dense 4096-token prefill, Sapphire Rapids, rdtsc per phase): with the f32 path's
// per-row softmax, a P @ V added to the numerator from memory and scalar q rounding and division, the
// tiles took 35% and the rest 65%; softmax_block, P @ V onto loaded C tiles and vector rounding and
// division took the attention from 1335 to 937 ms over 6 layers (512 tokens: 45 to 27 ms). The weights'
// exp in base 2 on VREDUCEPS / VSCALEFPS (exp2_lanes) took the softmax's share from 42% to 38% (the attention
// 1.04-1.08x, alternated). With the tiles alone (softmax skipped) a 4096-token call (hq 32, hk 4, two
// threads) took 67-77 ms, with the softmax alone 49-53, together 111-117: the two do not overlap, and
// issuing a row group's score tiles between the previous group's softmax blocks changed nothing.
//
// Chunks of 128 positions, not 64: a stand-alone loop priced a 2 x 2 block at its products plus 150-250
// cycles, and P @ V over 64 positions has only 8 products a block (~30% of the tile peak; 16 products
// over 128 positions, ~47%). The softmax sums a row's weights as it goes (a tree over 8 vectors spilled
// registers and took back the gain). Attention alternated against 64-position chunks: dense 4096 tokens
// 928 / 926 -> 816 / 813 ms over 6 layers, MoE 544 -> 452 ms over 4, dense 512 tokens 1.05x.
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

namespace opchain::cpu {

namespace {

constexpr int64_t kChunk = 128;               // kv positions per online-softmax step: absolute [128c, 128c + 128)
constexpr int64_t kChunkTiles = kChunk / 16;  // a chunk's position tiles (score columns)
constexpr int kChunkVecs = kChunk / 16;       // a row's scores in zmm vectors
constexpr int64_t kTile = 512;                // bf16 per tile: 16 rows x 32
constexpr int64_t kBlock = 16;                // rows per tile

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
    for (int64_t e = 0; e < d; ++e)
      kp[(e / 32 * kChunkTiles + nt) * kTile + (e % 32) / 2 * 32 + col * 2 + (e & 1)] = kr[e];
    const int64_t vrow = (j / 32) * vtiles * kTile + (j % 32) / 2 * 32 + (j & 1);
    for (int64_t e = 0; e < d; ++e) vp[vrow + e / 16 * kTile + e % 16 * 2] = vr[e];
  }
}

}  // namespace

bool amx_attention_applies(const AttnJob& job) {
  if (!job.bf16_dots || job.d % 32 != 0 || active_isa() != Isa::Amx || !amx_supported()) return false;
#if OPCHAIN_CPU_X86
  // VREDUCEPS (the weights' 2^f) is AVX512DQ, which every AMX CPU has but the tier does not check.
  static const bool dq = (__builtin_cpu_init(), __builtin_cpu_supports("avx512dq"));
  return dq;
#else
  return false;
#endif
}

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
namespace {

inline __mmask16 first_n(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// C tiles (rb, j), rb < RB, j < 2 (tmm0..3): the sum over k steps ks of A row block rb (16 rows of
// 32 bf16 at a + rb * 16 * lda + 32 ks) times B tile (ks, j) at b + (ks * b_step + j) * kTile, added
// to what is at c + rb * 16 * ldc + 16 j (kAddToC; else to zero) and stored there as f32.
template <int RB, bool kAddToC>
inline void tile_block(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t b_step, int64_t ksteps, float* c,
                       int64_t ldc) {
  if constexpr (kAddToC) {
    _tile_loadd(0, c, ldc * 4);
    _tile_loadd(1, c + 16, ldc * 4);
    if constexpr (RB == 2) {
      _tile_loadd(2, c + kBlock * ldc, ldc * 4);
      _tile_loadd(3, c + kBlock * ldc + 16, ldc * 4);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (RB == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
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
template <bool kAddToC>
inline void tile_rows(const uint16_t* a, int64_t lda, int64_t rb0, int64_t rows16, const uint16_t* b, int64_t b_step,
                      int64_t cols, int64_t ksteps, float* c, int64_t ldc) {
  for (int64_t rb = rb0; rb < rows16; rb += 2 * kBlock) {
    for (int64_t j = 0; j < cols; j += 2) {
      if (rows16 - rb >= 2 * kBlock)
        tile_block<2, kAddToC>(a + rb * lda, lda, b + j * kTile, b_step, ksteps, c + rb * ldc + j * 16, ldc);
      else
        tile_block<1, kAddToC>(a + rb * lda, lda, b + j * kTile, b_step, ksteps, c + rb * ldc + j * 16, ldc);
    }
  }
}

// f32 to bf16, rounded to nearest even with NaNs kept quiet: f32_to_bf16 (core/dtype.h) on 16 lanes,
// bit for bit (VCVTNEPS2BF16 would flush denormals).
inline __m256i round_bf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
}

// 2^t on the lanes in k (the others 0). VREDUCEPS gives f = t - floor(t) in [0, 1), a degree-4 fit of
// 2^f with the constant term exactly 1 (relative error 8.6e-6, against the 2^-9 of the bf16 rounding
// every weight then takes; 2^0 is exactly 1, so a row whose maximum holds keeps alpha == 1), and
// VSCALEFPS multiplies by 2^floor(t): 6 operations where an exp with Cephes' degree-6 polynomial took 14
// (the softmax was 42% of a 4096-token prefill's attention). t must not be -inf or NaN.
inline __m512 exp2_lanes(__mmask16 k, __m512 t) {
  const __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.013180243782699108f), f, _mm512_set1_ps(0.052607644349336624f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24114499986171722f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6930499076843262f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(k, p, t);
}

// Lane x of the result is the max (kMax) or sum of the 16 lanes of v[x]: four rounds of pairing halves
// (15 operations and 31 shuffles for 16 rows, where a reduction per row takes 4 operations and 5
// shuffles). Each row's lanes are combined in a fixed order of their own.
template <bool kMax>
inline __m512 combine(__m512 a, __m512 b) {
  return kMax ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b);
}

template <bool kMax>
inline __m512 reduce_rows(const __m512* v) {
  __m512 w[8], u[4], t[2];
  for (int i = 0; i < 8; ++i)  // row 2i's 128-bit quarters (0 op 2, 1 op 3) in quarters 0, 1; row 2i + 1's in 2, 3
    w[i] = combine<kMax>(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xee));
  for (int i = 0; i < 4; ++i)  // quarter j: row 4i + j's four partial lanes
    u[i] = combine<kMax>(_mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0xdd));
  for (int i = 0; i < 2; ++i)  // quarter j: two lanes of row 8i + j, then two of row 8i + 4 + j
    t[i] =
        combine<kMax>(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44), _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xee));
  // lane 4j + s: row j + 4s
  const __m512 r = combine<kMax>(_mm512_shuffle_ps(t[0], t[1], 0x88), _mm512_shuffle_ps(t[0], t[1], 0xdd));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

// One chunk's online-softmax step for a block of 16 rows (row x: cnt[x] scores at score + x * kChunk,
// running max m[x], denominator l[x], numerator acc + x * d): the chunk's maximum of the scaled scores,
// the rescale where it rises, the weights 2^(s - m) summed into l and rounded to bf16 into the row's P
// (positions past cnt[x] zero). Scores are scaled by scale * log2(e), so m is in base-2 units and the
// weights are e^(scale s - max). Each row's arithmetic is its own: lanes of the block's vectors never
// mix rows, and a row of no visible position keeps m = -inf, l = 0 and weights 0.
inline void softmax_block(const float* score, const int64_t* cnt, float scale, float* m, float* l, float* acc,
                          int64_t d, uint16_t* p) {
  alignas(64) float alpha[kBlock], m_row[kBlock];
  __m512 part[kBlock];  // per row: lane-wise maxima, then lane-wise sums
  const __m512 sc = _mm512_set1_ps(scale * 1.44269504088896341f);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t x = 0; x < kBlock; ++x) {
    const float* sr = score + x * kChunk;
    __m512 mx = ninf;
    for (int q = 0; q < kChunkVecs; ++q) {
      const __mmask16 k = first_n(cnt[x] - 16 * q);
      mx = _mm512_mask_max_ps(mx, k, mx, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, sr + 16 * q), sc));
    }
    part[x] = mx;
  }
  const __m512 m_old = _mm512_loadu_ps(m), m_new = _mm512_max_ps(m_old, reduce_rows<true>(part));
  const __mmask16 seen = _mm512_cmp_ps_mask(m_new, ninf, _CMP_NEQ_OQ);  // unseen rows: 2^0 = 1
  // A first visible chunk has m_old = -inf: its alpha (which scales zeros) is 2^-200 = 0.
  const __m512 a = exp2_lanes(0xffff, _mm512_max_ps(_mm512_maskz_sub_ps(seen, m_old, m_new), _mm512_set1_ps(-200.0f)));
  _mm512_store_ps(alpha, a);
  _mm512_storeu_ps(m, m_new);
  _mm512_store_ps(m_row, m_new);
  for (int64_t x = 0; x < kBlock; ++x) {
    if (alpha[x] != 1.0f) {  // the maximum rose: rescale what was summed under the old one
      const __m512 ax = _mm512_set1_ps(alpha[x]);
      float* ar = acc + x * d;
      for (int64_t e = 0; e < d; e += 16) _mm512_storeu_ps(ar + e, _mm512_mul_ps(_mm512_loadu_ps(ar + e), ax));
    }
    const float* sr = score + x * kChunk;
    const __m512 neg_m = _mm512_set1_ps(-m_row[x]);
    __m512 sum = _mm512_setzero_ps();
    for (int q = 0; q < kChunkVecs; q += 2) {
      const __mmask16 k0 = first_n(cnt[x] - 16 * q), k1 = first_n(cnt[x] - 16 * q - 16);
      const __m512 w0 = exp2_lanes(k0, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k0, sr + 16 * q), sc, neg_m));
      const __m512 w1 = exp2_lanes(k1, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k1, sr + 16 * q + 16), sc, neg_m));
      _mm512_store_si512(p + x * kChunk + 16 * q, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(w1, w0)));
      sum = _mm512_add_ps(sum, _mm512_add_ps(w0, w1));
    }
    part[x] = sum;
  }
  _mm512_storeu_ps(l, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(l), a), reduce_rows<false>(part)));
}

// Row r of an item as in attention.cpp: kv head h0 + r / head_rows, query i0 + (r % head_rows) / group.
// Each kv head's rows are padded to whole row blocks (rows16): a row's state, its bf16 query and its
// weights sit at its padded index hh * rows16 + x; padding rows see no position.
void run_item(const AttnJob& job, const AttnSeq& s, const AttnItem& it, const uint16_t* panels) {
  const int64_t d = job.d, group = job.hq / job.hk, nq = it.i1 - it.i0, nh = it.h1 - it.h0;
  const int64_t head_rows = nq * group, rows16 = (head_rows + kBlock - 1) / kBlock * kBlock, padded = nh * rows16;
  thread_local std::vector<float> state_buf, score_buf;
  float* state = scratch_aligned(state_buf, static_cast<size_t>(padded * (d + 2)));
  float* acc = state;  // [padded, d]
  float* m = acc + padded * d;
  float* l = m + padded;
  float* score = scratch_aligned(score_buf, static_cast<size_t>(rows16 * kChunk));  // [rows16, kChunk]
  thread_local std::vector<uint16_t> qb_buf, pb_buf;
  uint16_t* qb = scratch_aligned(qb_buf, static_cast<size_t>(padded * d));       // [padded, d]
  uint16_t* pb = scratch_aligned(pb_buf, static_cast<size_t>(rows16 * kChunk));  // [rows16, kChunk]
  thread_local std::vector<int64_t> index_buf;
  int64_t* visible = scratch(index_buf, static_cast<size_t>(3 * padded));
  int64_t* count = visible + padded;
  int64_t* q_off = count + padded;  // the row's offset in q and out
  std::fill(acc, acc + padded * d, 0.0f);
  std::fill(m, m + padded, -std::numeric_limits<float>::infinity());
  std::fill(l, l + padded, 0.0f);
  for (int64_t hh = 0; hh < nh; ++hh) {
    for (int64_t x = 0; x < rows16; ++x) {
      const int64_t pr = hh * rows16 + x, i = it.i0 + x / group;
      uint16_t* qr = qb + pr * d;
      if (x >= head_rows) {
        visible[pr] = 0;
        std::memset(qr, 0, static_cast<size_t>(d) * 2);
        continue;
      }
      visible[pr] = s.past + i + 1;
      q_off[pr] = ((s.q_row0 + i) * job.hq + (it.h0 + hh) * group + x % group) * d;
      for (int64_t e = 0; e < d; e += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qr + e), round_bf16(_mm512_loadu_ps(job.q + q_off[pr] + e)));
    }
  }
  amx_configure(amx_full_tiles());

  const int64_t max_visible = s.past + it.i1, seq_len = s.past + s.q_len;
  for (int64_t c = 0; c * kChunk < max_visible; ++c) {
    const int64_t p0 = c * kChunk, p1 = std::min(p0 + kChunk, max_visible);
    const int64_t score_tiles = (p1 - p0 + 15) / 16;
    // Weights past the sequence's end are zero: P @ V takes the k steps (32 positions each) up to it.
    const int64_t pv_steps = (std::min(p0 + kChunk, seq_len) - p0 + 31) / 32;
    // Queries that see the chunk are [first, i1): visible past + i + 1 > p0.
    const int64_t first = std::max(it.i0, p0 - s.past);
    const int64_t rb0 = (first - it.i0) * group / kBlock * kBlock;  // the first row block seeing the chunk
    for (int64_t pr = 0; pr < padded; ++pr) count[pr] = std::clamp<int64_t>(std::min(p1, visible[pr]) - p0, 0, kChunk);
    for (int64_t hh = 0; hh < nh; ++hh) {
      const uint16_t* kp = panels + (c * job.hk + it.h0 + hh) * panel_elems(d);
      const uint16_t* vp = kp + kChunk * d;
      const int64_t base = hh * rows16;
      amx_compiler_barrier();
      tile_rows<false>(qb + base * d, d, rb0, rows16, kp, kChunkTiles, score_tiles, d / 32, score, kChunk);
      amx_compiler_barrier();
      for (int64_t xb = rb0; xb < rows16; xb += kBlock)
        softmax_block(score + xb * kChunk, count + base + xb, job.scale, m + base + xb, l + base + xb,
                      acc + (base + xb) * d, d, pb + xb * kChunk);
      amx_compiler_barrier();
      tile_rows<true>(pb, kChunk, rb0, rows16, vp, d / 16, d / 16, pv_steps, acc + base * d, d);
      amx_compiler_barrier();
    }
  }
  for (int64_t hh = 0; hh < nh; ++hh) {
    for (int64_t x = 0; x < head_rows; ++x) {
      const int64_t pr = hh * rows16 + x;
      float* out = job.out + q_off[pr];
      const float* a = acc + pr * d;
      if (l[pr] > 0.0f) {
        const __m512 inv = _mm512_set1_ps(1.0f / l[pr]);  // VDIVPS would cost more than the rest of the row
        for (int64_t e = 0; e < d; e += 16) _mm512_storeu_ps(out + e, _mm512_mul_ps(_mm512_loadu_ps(a + e), inv));
      } else {  // no visible position: the reference's empty softmax gives zeros
        std::fill(out, out + d, 0.0f);
      }
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
  for (int64_t i = 0; i < count; ++i)  // single-query sequences run decode_attention (attention.cpp): no panels
    first_chunk[i + 1] =
        first_chunk[i] + (seqs[i].q_len > 1 ? (seqs[i].past + seqs[i].q_len + kChunk - 1) / kChunk : 0);
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
  parallel_balanced(cost_before, total, [&](size_t i) {
    const AttnItem& it = items[i];
    run_item(job, seqs[it.seq], it, panels + first_chunk[it.seq] * job.hk * elems);
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
