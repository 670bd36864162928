// The Avx512Bf16 tier's bf16-activation matmul tile (Note [bf16 dot], cpu_kernels.h) in its two dot forms
// (Note [bf16 dot forms], simd.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/simd.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
// x rounded to bf16 (RNE, as vcvtne2ps2bf16 does), then multiplied with the bf16 weights as stored:
// no repacked weights. Dot form like micro() of simd_impl.inc: lane j of a vector accumulator takes the
// pairs (2j, 2j + 1) + 32 m in order, the last partial vector zero-padded, then one fixed tree; so an
// element's value depends only on its own row and weight row, never on the tile shape (batch invariant).
namespace opchain::cpu::avx512bf16 {
constexpr int64_t kPair = 32;  // bf16 elements per vector

#include "vendors/cpu/bf16_dot_forms.inc"

static inline float reduce(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// x[0, k) -> bf16, zero-padded to kp (a multiple of kPair).
static void to_bf16(const float* x, int64_t k, int64_t kp, uint16_t* out) {
  for (int64_t i = 0; i < kp; i += kPair) {
    const int64_t n = std::clamp<int64_t>(k - i, 0, kPair);
    const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(n <= 16 ? 0 : n >= 32 ? 0xffff : (1u << (n - 16)) - 1);
    const __m512 lo = _mm512_maskz_loadu_ps(m0, x + i);
    const __m512 hi = _mm512_maskz_loadu_ps(m1, x + i + 16);
    _mm512_storeu_si512(out + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

// Where the rows' vectors are: rows as separate arrays, or packed by pack_rows (the R rows' vectors of
// one k step adjacent: one sequential activation stream instead of R). A cursor reads row r's vector at
// its k step and moves one step on; the packed one is a pointer plus a fixed offset per row, where each
// row's address had been computed from k (the 8 x 3 block's step: ~20 scalar operations besides its 48
// FMAs, ~12 now). Sapphire Rapids, avx512bf16, CpuPerf.DISABLED_Prefill medians in three alternated
// rounds: +4-18% in the first, -3 to +9% in the second, -2 to +3% in the third; the dense model even.
struct RowArrays {
  const uint16_t* const* x;
  template <class D>
  struct Cursor {
    const uint16_t* const* x;
    int64_t at;
    typename D::X load(int r) const { return D::load_x(x[r] + at); }
    void next() { at += kPair; }
  };
  template <class D>
  Cursor<D> at(int64_t k) const {
    return {x, k};
  }
};
template <int R>
struct PackedRows {
  const char* xp;
  template <class D>
  struct Cursor {
    const char* p;
    typename D::X load(int r) const { return D::load_packed(p + r * D::kRegs * 64); }
    void next() { p += R * D::kRegs * 64; }
  };
  template <class D>
  Cursor<D> at(int64_t k) const {
    return {xp + static_cast<uint64_t>(k) / kPair * R * D::kRegs * 64};
  }
};

// pf: the next weight rows, prefetched C lines per k step for each of kPfGroups groups (C rows of k each,
// contiguous from pf on); with pf_every > 1 only the steps s with
// s % pf_every == pf_phase prefetch (their lines: the row blocks of a tile share the next group's lines
// between them, so the prefetch runs over the whole group's time instead of bursting in its first block).
// Weight groups whose lines each k step prefetches: the next one and the kPfGroups - 1 after it.
// A tile of 5-32 rows computes long enough per weight line that one group's lines per step leave the
// memory pipe half idle; touching four groups' lines keeps more requests in flight (a line already
// requested is an L2 hit the second time). The 248320 x 2048 lm_head probe, 2 threads, three A/B
// rounds against 1 group: 8 rows 44 -> 33 ms, 32 rows 87-89 -> 84-86 ms.
constexpr int64_t kPfGroups = 4;

// With k in chunks (the FMA form's batched-decode tiles) the next group's lines at the same k step are a
// whole group's chunk ahead (~1000 cycles), so one group is enough, and the other three groups' 9 lines
// a step only cost load slots (each line asked for four times). Sapphire Rapids, OPCHAIN_CPU_ISA=
// avx512bf16, 2026-12-07, against four groups: dense decode batch 8 +4%, +4%, +14% in three alternated
// rounds (`opchain bench`, 75.7 -> 78.7 tok/s in the first); 8 rows, one thread, weights in L3
// (CpuPerf.DISABLED_RowCounts) 88-97 -> 106-114 GFLOP/s; two groups in between.
constexpr int64_t kPfGroupsChunked = 1;

// The k range a micro-kernel call covers. A whole dot (keep null) starts from zero and ends in out. A
// tile may instead split k into chunks so that its packed rows stay in L1 across weight groups: then
// the accumulators wait in `keep` (R x C vectors, row stride keep_ld) between the chunks, stored and
// reloaded whole, so the chunks change no bit of the result.
struct KSpan {
  int64_t k0 = 0, k1 = 0, k = 0;  // [k0, k1) of k; k0 and k1 are multiples of kPair or k
  float* keep = nullptr;          // 16 floats an accumulator
  int64_t keep_ld = 0;            // in accumulators
};

// The register block: R rows x C weight rows. Each form's accumulators, the C weight vectors of a step
// and one row's activation vector fit the 32 zmm registers.
template <Bf16DotForm F, int R, int C, class Rows = RowArrays>
static inline void micro(Rows x, const uint16_t* const* w, KSpan ks, float* out, int64_t ldo, const char* pf = nullptr,
                         int64_t pf_every = 1, int64_t pf_phase = 0) {
  using D = Dot<F>;
  static_assert(R * C + (C + 1) * D::kRegs <= 32, "zmm registers");
  const int64_t k = ks.k;
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c)
      acc[r][c] = ks.k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(ks.keep + (r * ks.keep_ld + c) * 16);
  auto xc = x.template at<D>(ks.k0);
  auto step = [&](const typename D::W* wv) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const typename D::X xv = xc.load(r);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = D::dot(acc[r][c], xv, wv[c]);
    }
  };
  int64_t i = ks.k0;
  // The steps that prefetch: s % pf_every == pf_phase, counted down rather than divided (an idiv a step).
  int64_t until_pf = pf ? ((pf_phase - i / kPair) % pf_every + pf_every) % pf_every : 0;
  for (int64_t s = i / kPair; i + kPair <= ks.k1; i += kPair, ++s) {
    const bool prefetch = pf && until_pf == 0;
    if (pf && --until_pf < 0) until_pf = pf_every - 1;
    if (prefetch) {
      if (ks.keep) {  // a chunk: the same k step of the next groups' rows (row c of group g at pf + (gC + c) k)
        for (int64_t g = 0; g < kPfGroupsChunked; ++g) {
#pragma GCC unroll 8
          for (int c = 0; c < C; ++c) __builtin_prefetch(pf + ((g * C + c) * k + i) * 2, 0, 2);
        }
      } else {  // the next groups' lines in order, C a step (see simd_impl.inc's micro)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + (s * C + c) * 64, 0, 2);
        for (int64_t g = 1; g < kPfGroups; ++g) {
#pragma GCC unroll 8
          for (int c = 0; c < C; ++c) __builtin_prefetch(pf + g * k * 2 * C + (s * C + c) * 64, 0, 2);
        }
      }
    }
    typename D::W wv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wv[c] = D::load_w(w[c] + i);
    step(wv);
    xc.next();
  }
  if (i < ks.k1) {  // the last, partial step of k: x is zero-padded already; the weights are masked
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (k - i)) - 1);
    typename D::W wv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) wv[c] = D::load_w(w[c] + i, m);
    step(wv);
  }
  if (ks.k1 < k && ks.keep != nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) _mm512_storeu_ps(ks.keep + (r * ks.keep_ld + c) * 16, acc[r][c]);
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) out[r * ldo + c] = reduce(acc[r][c]);
}

// The same dot products as micro<R, C> (same lanes, same order: the same bits) for few rows: the R
// activation vectors stay in registers and the C weight rows stream past them one vector at a time, so
// C can be 6-8 (that many weight streams in flight, what a memory-bound decode product needs).
template <Bf16DotForm F, int R, int C>
static inline void micro_few_rows(const uint16_t* const* x, const uint16_t* const* w, int64_t k, float* out,
                                  int64_t ldo, const char* pf) {
  using D = Dot<F>;
  static_assert(R * C + (R + 1) * D::kRegs <= 32, "zmm registers");
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  auto step = [&](int64_t at, __mmask32 m, bool full) {
    typename D::X xv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xv[r] = D::load_x(x[r] + at);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const typename D::W wv = full ? D::load_w(w[c] + at) : D::load_w(w[c] + at, m);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = D::dot(acc[r][c], xv[r], wv);
    }
  };
  int64_t i = 0;
  for (; i + kPair <= k; i += kPair) {
    if (pf) {
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) __builtin_prefetch(pf + c * 64, 0, 2);
      pf += C * 64;
    }
    step(i, static_cast<__mmask32>(~0u), true);
  }
  if (i < k) step(i, static_cast<__mmask32>((uint64_t{1} << (k - i)) - 1), false);  // x is zero-padded already
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) out[r * ldo + c] = reduce(acc[r][c]);
}

// micro<R, C> on rows packed by pack_rows (the same bits: only where the vectors are read from differs).
template <Bf16DotForm F, int R, int C>
static inline void micro_packed(const char* xp, const uint16_t* const* w, KSpan ks, float* out, int64_t ldo,
                                const char* pf, int64_t pf_every, int64_t pf_phase) {
  micro<F, R, C>(PackedRows<R>{xp}, w, ks, out, ldo, pf, pf_every, pf_phase);
}

// Bytes of one packed row (kp bf16 elements).
template <Bf16DotForm F>
constexpr int64_t packed_row_bytes(int64_t kp) {
  return kp / kPair * Dot<F>::kRegs * 64;
}

// Rows (bf16, kp wide, zero-padded) in blocks of 8: block b holds, for each k step, its rows' steps in
// the form's layout (Dot::pack) one after another.
template <Bf16DotForm F>
static void pack_rows(const uint16_t* xb, int64_t rows, int64_t kp, char* out) {
  constexpr int64_t step_bytes = Dot<F>::kRegs * 64;
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    const int64_t n = std::min<int64_t>(8, rows - r0);
    char* blk = out + r0 * packed_row_bytes<F>(kp);
    for (int64_t s = 0; s < kp; s += kPair)
      for (int64_t r = 0; r < n; ++r) Dot<F>::pack(xb + (r0 + r) * kp + s, blk + (s / kPair * n + r) * step_bytes);
  }
}

// Every row block prefetches its share of the next group's lines (micro's pf_every / pf_phase).
template <Bf16DotForm F, int C>
static inline void rows_c_packed(const char* xp, int64_t rows, int64_t kp, const uint16_t* const* w, KSpan ks,
                                 float* out, int64_t ldo, const char* pf) {
  const int64_t blocks = (rows + 7) / 8, row_bytes = packed_row_bytes<F>(kp);
  for (int64_t r = 0; r < rows; r += 8) {
    KSpan rk = ks;
    if (rk.keep) rk.keep += r * rk.keep_ld * 16;
    const char* x = xp + r * row_bytes;
    float* o = out + r * ldo;
    const int64_t b = r / 8;
    switch (std::min<int64_t>(rows - r, 8)) {
      case 8:
        micro_packed<F, 8, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 7:
        micro_packed<F, 7, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 6:
        micro_packed<F, 6, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 5:
        micro_packed<F, 5, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 4:
        micro_packed<F, 4, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 3:
        micro_packed<F, 3, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      case 2:
        micro_packed<F, 2, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
      default:
        micro_packed<F, 1, C>(x, w, rk, o, ldo, pf, blocks, b);
        break;
    }
  }
}

// pf: the next weight rows (contiguous after w[C - 1]), prefetched during the first row block.
template <Bf16DotForm F, int C>
static inline void rows_c(const uint16_t* const* x, int64_t rows, const uint16_t* const* w, int64_t k, float* out,
                          int64_t ldo, const char* pf) {
  const KSpan ks{0, k, k};
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8, pf = nullptr) micro<F, 8, C>(RowArrays{x + r}, w, ks, out + r * ldo, ldo, pf);
  float* o = out + r * ldo;
  switch (rows - r) {
    case 7:
      micro<F, 7, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 6:
      micro<F, 6, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 5:
      micro<F, 5, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 4:
      micro<F, 4, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 3:
      micro<F, 3, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 2:
      micro<F, 2, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    case 1:
      micro<F, 1, C>(RowArrays{x + r}, w, ks, o, ldo, pf);
      break;
    default:
      break;
  }
}

// Weight rows a few-row kernel streams at once: 8, or fewer where the form's R activation vectors and
// R x 8 accumulators would not fit the registers.
template <Bf16DotForm F, int R>
constexpr int kFewCols = R * 8 + (R + 1) * Dot<F>::kRegs <= 32   ? 8
                         : R * 6 + (R + 1) * Dot<F>::kRegs <= 32 ? 6
                                                                 : 4;

// Weight rows of a group for 5 rows and more: 8 x 3 accumulators (the FMA form's 6 widened weight
// vectors and 2 activation vectors fill the other 8 registers).
constexpr int kGroupCols = 3;

// The k chunk of the packed rows: all of k for the vdpbf16ps form. The FMA form's widened rows are twice
// as wide: for a tile of up to kFewRowsChunked rows (batched decode), chunks of kChunkFmaFew, in which an
// 8-row block's chunk (32 KiB) stays in a 48 KiB L1 while every weight group passes; for more rows, all
// of k up to kChunkFma and chunks of that beyond, so that a weight group stays in L1 while the tile's row
// blocks pass over it from L2 (32 rows x 4096 x 4 bytes = 512 KiB at most), with fewer round trips of
// the accumulators between chunks. Sapphire Rapids, OPCHAIN_CPU_ISA=avx512bf16, 2 threads, 1024 against
// 4096 for every tile, alternated: dense prefill 512 173.0 / 191.9 / 180.1 against 219.4 / 193.6 / 201.9
// tok/s (CpuPerf.DISABLED_Prefill: 512 x 9728 -> 2560 183-201 against 224-228 GFLOP/s; unchunked 201-213),
// but dense decode batch 8 73.5 / 74.5 / 74.4 against 63.9 / 64.5 / 65.3; batch 32 even. Chunks change
// no bit (the accumulators wait whole in `keep`).
constexpr int64_t kChunkFma = 4096, kChunkFmaFew = 1024, kFewRowsChunked = 16;
template <Bf16DotForm F>
int64_t chunk_k(int64_t k, int64_t rows) {
  if (F == Bf16DotForm::Vdpbf16ps) return k;
  return std::min(k, rows <= kFewRowsChunked ? kChunkFmaFew : kChunkFma);
}

// From this many rows the FMA form's tile is the packed f32 kernel walking k in the form's order (Note
// [bf16 pair order], simd_impl.inc): the same bits, 4 x 6 accumulators on a weight panel widened once per
// k block, where the 8 x 3 blocks below widen the weights at every step and read twice the activation
// bytes per FMA. Sapphire Rapids, OPCHAIN_CPU_ISA=avx512bf16, alternated against the 8 x 3 blocks: one
// thread, weights in cache (CpuPerf.DISABLED_RowCounts, 768 weight rows, k 2048 and 4096), 8 rows -7 to
// -18%, 9-11 rows mixed, 12-13 rows -5 to +15%, 24-64 rows +5 to +21%; two threads
// (CpuPerf.DISABLED_Prefill, medians) the 512-row linears and the experts' grouped matmuls -1 to +22%
// (median +6%); in two rounds against llama.cpp dense prefill 512 +9 and +12%, MoE prefill 512 +5 and +12%.
constexpr int64_t kPairOrderMinRows = 12;

// A gemm tile (bf16 weights): the tile's rows are rounded to bf16 once (and packed, from 5 rows on),
// then weight rows in groups of kGroupCols (4-8 for 1-4 rows: more independent loads in flight) stay
// in L1 while the rows pass over them, or, with k in chunks, an 8-row block's chunk stays in L1 while
// the groups pass.
template <Bf16DotForm F>
static void gemm_tile(const GemmTile& t) {
  constexpr int G = kGroupCols;
  constexpr int64_t kRows = 32, kCols = 96;
  if (F == Bf16DotForm::FmaPairs && t.rows >= kPairOrderMinRows) {  // the same bits, the packed tile's blocking
    bf16_pair_order_gemm_tile()(t);
    return;
  }
  const int64_t kp = (t.k + kPair - 1) / kPair * kPair;
  thread_local std::vector<uint16_t> xbuf;
  uint16_t* xb = scratch_aligned(xbuf, static_cast<size_t>(t.rows * kp));
  for (int64_t r = 0; r < t.rows; ++r) to_bf16(t.x + r * t.ldx, t.k, kp, xb + r * kp);
  thread_local std::vector<char> packbuf;
  const bool packed = t.rows >= 5;
  char* xpk = packed ? scratch_aligned(packbuf, static_cast<size_t>(t.rows * packed_row_bytes<F>(kp))) : nullptr;
  if (packed) pack_rows<F>(xb, t.rows, kp, xpk);
  thread_local std::vector<float> keepbuf;
  const uint16_t* xr[kRows];
  const uint16_t* wr[kCols];
  for (int64_t c0 = 0; c0 < t.cols; c0 += kCols) {
    const int64_t cols = std::min(kCols, t.cols - c0);
    for (int64_t c = 0; c < cols; ++c) wr[c] = static_cast<const uint16_t*>(t.w) + (c0 + c) * t.ldw;
    for (int64_t r0 = 0; r0 < t.rows; r0 += kRows) {
      const int64_t rows = std::min(kRows, t.rows - r0);
      for (int64_t r = 0; r < rows; ++r) xr[r] = xb + (r0 + r) * kp;
      float* o = t.out + r0 * t.ldo + c0;
      // Rows are contiguous: the rows after a group are where the next group (or chunk) starts. Only
      // the first row block prefetches; later ones find the weights in cache.
      const uint16_t* wbase = static_cast<const uint16_t*>(t.w) + c0 * t.ldw;
      auto next = [&](int64_t c) -> const char* {
        return r0 == 0 ? reinterpret_cast<const char*>(wbase + c * t.ldw) : nullptr;
      };
      int64_t c = 0;
      auto few = [&]<int R, int C>() {  // few rows: memory bound, stream C weight rows at once
        for (; c + C <= cols; c += C) micro_few_rows<F, R, C>(xr, wr + c, t.k, o + c, t.ldo, next(c + C));
      };
      switch (rows) {
        case 1:
          few.template operator()<1, kFewCols<F, 1>>();
          break;
        case 2:
          few.template operator()<2, kFewCols<F, 2>>();
          break;
        case 3:
          few.template operator()<3, kFewCols<F, 3>>();
          break;
        case 4:
          few.template operator()<4, kFewCols<F, 4>>();
          break;
        default:
          break;
      }
      if (packed) {  // kRows is a multiple of 8, so the row block starts a packed block
        const char* xp = xpk + r0 * packed_row_bytes<F>(kp);
        const int64_t kc = chunk_k<F>(t.k, t.rows);
        if (kc >= t.k) {
          for (; c + G <= cols; c += G)
            rows_c_packed<F, G>(xp, rows, kp, wr + c, KSpan{0, t.k, t.k}, o + c, t.ldo, next(c + G));
          for (; c < cols; ++c) rows_c_packed<F, 1>(xp, rows, kp, wr + c, KSpan{0, t.k, t.k}, o + c, t.ldo, nullptr);
          continue;
        }
        // k in chunks: each 8-row block's chunk stays in L1 while every weight group's chunk passes
        // (from L2; the first block's pass prefetches them from memory).
        float* keep = scratch(keepbuf, static_cast<size_t>(8 * kCols * 16));
        const int64_t c_first = c;
        for (int64_t rb = 0; rb < rows; rb += 8) {
          const int64_t n = std::min<int64_t>(8, rows - rb);
          const char* xb8 = xp + rb * packed_row_bytes<F>(kp);
          for (int64_t k0 = 0; k0 < t.k; k0 += kc) {
            auto span = [&](int64_t col) { return KSpan{k0, std::min(k0 + kc, t.k), t.k, keep + col * 16, kCols}; };
            auto pf = [&](int64_t col) { return rb == 0 ? next(col) : nullptr; };
            for (c = c_first; c + G <= cols; c += G)
              rows_c_packed<F, G>(xb8, n, kp, wr + c, span(c), o + rb * t.ldo + c, t.ldo, pf(c + G));
            for (; c < cols; ++c) rows_c_packed<F, 1>(xb8, n, kp, wr + c, span(c), o + rb * t.ldo + c, t.ldo, nullptr);
          }
        }
        continue;
      }
      for (; c + G <= cols; c += G) rows_c<F, G>(xr, rows, wr + c, t.k, o + c, t.ldo, next(c + G));
      for (; c < cols; ++c) rows_c<F, 1>(xr, rows, wr + c, t.k, o + c, t.ldo, nullptr);
    }
  }
}
}  // namespace opchain::cpu::avx512bf16
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86

namespace opchain::cpu {

namespace {

Bf16DotForm default_bf16_dot_form() {
  if (const char* env = std::getenv("OPCHAIN_CPU_BF16_DOT")) {
    if (std::string_view(env) == "fma") return Bf16DotForm::FmaPairs;
    if (std::string_view(env) == "vdpbf16ps") return Bf16DotForm::Vdpbf16ps;
  }
  return bf16_dot_forms_agree() ? Bf16DotForm::FmaPairs : Bf16DotForm::Vdpbf16ps;
}

std::atomic<Bf16DotForm>& form_slot() {
  static std::atomic<Bf16DotForm> slot{default_bf16_dot_form()};
  return slot;
}

}  // namespace

bool bf16_dot_forms_agree() {
#if OPCHAIN_CPU_X86
  static const bool intel = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") != 0;
  }();
  return intel;
#else
  return false;
#endif
}

const char* bf16_dot_form_name(Bf16DotForm f) { return f == Bf16DotForm::FmaPairs ? "fma" : "vdpbf16ps"; }
Bf16DotForm bf16_dot_form() { return form_slot().load(std::memory_order_relaxed); }
void set_bf16_dot_form(Bf16DotForm f) { form_slot().store(f, std::memory_order_relaxed); }

GemmTileFn avx512_bf16_gemm_tile(Bf16DotForm f) {
#if OPCHAIN_CPU_X86
  return f == Bf16DotForm::FmaPairs ? &avx512bf16::gemm_tile<Bf16DotForm::FmaPairs>
                                    : &avx512bf16::gemm_tile<Bf16DotForm::Vdpbf16ps>;
#else
  (void)f;
  return nullptr;
#endif
}

}  // namespace opchain::cpu
