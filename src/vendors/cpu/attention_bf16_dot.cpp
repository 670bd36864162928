// Note [bf16 dot attention]: prefill attention's two products on VDPBF16PS. At a matmul precision other
// than F32 (Note [Matmul precision]) a prefill's q . k and p . v may take bf16 inputs, as on the AMX
// tiles (Note [AMX attention]). On Isa::Avx512Bf16 in the Vdpbf16ps form (Note [bf16 dot forms]: where
// the CPU runs VDPBF16PS at the FMA's instruction rate, twice its flops, as Zen 4 does), for a head dim
// that is a multiple of 32, attention.cpp's chunk loop keeps its items and its absolute chunks of 32
// positions, and swaps the f32 products and the softmax step for these:
// - q rows rounded to bf16 (RNE) once per item; a chunk's keys and values of one kv head rounded too (a
//   bf16 cache is read as stored);
// - scores: lane j of a row's two accumulators is position j's dot, the head dim taken in pairs
//   (2c, 2c + 1), c in order: keys laid out as [d/2][32] pairs, a 32-bit transpose of the rows;
// - the online softmax in powers of two (softmax_weights): scores times scale * log2(e), so a weight is
//   one VSCALEFPS of a degree-5 polynomial (8 vector operations, where the f32 loops' exp takes ~18 and a
//   clamp); the weights go straight out as the bf16 pairs P @ V reads, the positions a row must not see
//   zero, and their unrounded sum into the denominator. The f32 loops keep the accurate exp: their
//   results are the reference's. Zen 4, CpuPerf.DISABLED_PrefillAttentionBf16 (hq 32, hk 4, d 128, 2
//   threads), against the f32 loops' softmax step in three alternated rounds: 512 tokens 9.8-10.2 ->
//   8.5-8.8 ms, 4096 536-561 -> 446-464 ms;
//   it had been ~25% of the time;
// - P @ V: positions taken in pairs (2j, 2j + 1), j in order, onto the row's f32 numerator: values laid
//   out as [16][d] pairs.
// Every element is its own row's fixed-order sum over a chunk whose bounds are absolute, so a query's
// bits depend on its sequence alone (batch invariance, Note [cpu kernels]). The results differ from the
// f32 loops' by the roundings of q, k, v and p, within the harness's bf16 attention tolerance.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"

namespace opchain::cpu {

bool dot_attention_applies(const AttnJob& job) {
  return OPCHAIN_CPU_X86 && job.bf16_dots && job.d % 32 == 0 && active_isa() == Isa::Avx512Bf16 &&
         bf16_dot_form() == Bf16DotForm::Vdpbf16ps;
}

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
namespace dot_attention {
namespace {

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }
inline __m512i as_i(__m512bh v) { return reinterpret_cast<__m512i>(v); }

template <int R>
inline void scores_rows(const uint32_t* q, int64_t qld, const uint32_t* kp, int64_t pairs, float* out, int64_t ldo) {
  __m512 acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < pairs; ++c) {
    const __m512bh k0 = as_bh(_mm512_loadu_si512(kp + c * kChunk)),
                   k1 = as_bh(_mm512_loadu_si512(kp + c * kChunk + 16));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh qr = as_bh(_mm512_set1_epi32(static_cast<int>(q[r * qld + c])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], k0, qr);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], k1, qr);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(out + r * ldo, acc[r][0]);
    _mm512_storeu_ps(out + r * ldo + 16, acc[r][1]);
  }
}

// acc[r][c0, c0 + 16 V) += the chunk's 16 position pairs of weights (w: 16 pairs a row) times values.
template <int R, int V>
inline void weighted_rows(float* acc, int64_t d, const uint32_t* w, const uint32_t* vp, int64_t c0) {
  __m512 a[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) a[r][v] = _mm512_loadu_ps(acc + r * d + c0 + v * 16);
  for (int64_t j = 0; j < kChunk / 2; ++j) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m512bh x = as_bh(_mm512_loadu_si512(vp + j * d + c0 + v * 16));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        a[r][v] = _mm512_dpbf16_ps(a[r][v], x, as_bh(_mm512_set1_epi32(static_cast<int>(w[r * 16 + j]))));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(acc + r * d + c0 + v * 16, a[r][v]);
}

// 2^t for t <= 0 (masked lanes may hold anything: the caller zeroes them): 2^floor(t) times a degree-5
// polynomial of the fraction t - floor(t) in [0, 1), fitted for relative error (7.5e-8 before rounding),
// and VSCALEFPS for the power, which gives 0 where 2^t is below f32's range. Lanes are independent.
inline __m512 exp2_nonpositive(__m512 t) {
  const __m512 f = _mm512_sub_ps(t, _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  __m512 p = _mm512_set1_ps(1.8775759963318706e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.989342488348484e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.582631379365921e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4015362560749054e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931530833244324e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999999403953552e-1f));
  return _mm512_scalef_ps(p, t);
}

template <int R>
inline void weighted_block(float* acc, int64_t d, const uint32_t* w, const uint32_t* vp) {
  int64_t c = 0;
  for (; c + 128 <= d; c += 128) weighted_rows<R, 8>(acc, d, w, vp, c);
  for (; c < d; c += 32) weighted_rows<R, 2>(acc, d, w, vp, c);
}

}  // namespace

void round_rows(const float* const* x, int64_t rows, int64_t d, uint16_t* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < d; c += 32) {
      const __m512 lo = _mm512_loadu_ps(x[r] + c), hi = _mm512_loadu_ps(x[r] + c + 16);
      _mm512_storeu_si512(out + r * d + c, as_i(_mm512_cvtne2ps_pbh(hi, lo)));
    }
}

void pack_values(const uint16_t* const* v, int64_t n, int64_t d, uint32_t* vp) {
  // Element 2i of a result takes element i of the first row's 32, element 2i + 1 element i of the second's.
  alignas(64) int16_t lo_idx[32], hi_idx[32];
  for (int i = 0; i < 16; ++i) {
    lo_idx[2 * i] = static_cast<int16_t>(i);
    lo_idx[2 * i + 1] = static_cast<int16_t>(32 + i);
    hi_idx[2 * i] = static_cast<int16_t>(16 + i);
    hi_idx[2 * i + 1] = static_cast<int16_t>(48 + i);
  }
  const __m512i lo = _mm512_load_si512(lo_idx), hi = _mm512_load_si512(hi_idx);
  for (int64_t j = 0; j < kChunk / 2; ++j) {
    const uint16_t* a = 2 * j < n ? v[2 * j] : nullptr;
    const uint16_t* b = 2 * j + 1 < n ? v[2 * j + 1] : nullptr;
    uint32_t* dst = vp + j * d;
    for (int64_t c = 0; c < d; c += 32) {
      const __m512i va = a ? _mm512_loadu_si512(a + c) : _mm512_setzero_si512();
      const __m512i vb = b ? _mm512_loadu_si512(b + c) : _mm512_setzero_si512();
      _mm512_storeu_si512(dst + c, _mm512_permutex2var_epi16(va, lo, vb));
      _mm512_storeu_si512(dst + c + 16, _mm512_permutex2var_epi16(va, hi, vb));
    }
  }
}

void scores(const uint16_t* q, int64_t rows, const uint32_t* kp, int64_t d, float* out, int64_t ldo) {
  const auto* q32 = reinterpret_cast<const uint32_t*>(q);
  const int64_t pairs = d / 2;
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) scores_rows<8>(q32 + r * pairs, pairs, kp, pairs, out + r * ldo, ldo);
  for (; r < rows; ++r) scores_rows<1>(q32 + r * pairs, pairs, kp, pairs, out + r * ldo, ldo);
}

void softmax_weights(const float* s, int64_t lds, int64_t rows, const int64_t* cnt, float scale, float* m, float* l,
                     float* acc, int64_t d, uint32_t* w) {
  const __m512 c = _mm512_set1_ps(scale * 1.44269504088896341f);  // log2(e): the weights are powers of two
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = std::clamp<int64_t>(cnt[r], 0, kChunk);
    const uint64_t bits = n >= 32 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    const __mmask16 k0 = static_cast<__mmask16>(bits), k1 = static_cast<__mmask16>(bits >> 16);
    const float* sr = s + r * lds;
    const __m512 x0 = _mm512_mask_mul_ps(neg_inf, k0, _mm512_loadu_ps(sr), c);
    const __m512 x1 = _mm512_mask_mul_ps(neg_inf, k1, _mm512_loadu_ps(sr + 16), c);
    const float chunk_max = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
    uint32_t* wr = w + r * 16;
    if (n == 0) {  // a row that sees none of the chunk: no weight, nothing to add
      _mm512_storeu_si512(wr, _mm512_setzero_si512());
      continue;
    }
    if (chunk_max > m[r]) {  // rescale what was summed under the old maximum
      const float alpha = std::exp2(m[r] - chunk_max);
      l[r] *= alpha;
      const __m512 av = _mm512_set1_ps(alpha);
      float* a = acc + r * d;
      for (int64_t i = 0; i < d; i += 16) _mm512_storeu_ps(a + i, _mm512_mul_ps(_mm512_loadu_ps(a + i), av));
      m[r] = chunk_max;
    }
    const __m512 mv = _mm512_set1_ps(m[r]);
    const __m512 e0 = _mm512_maskz_mov_ps(k0, exp2_nonpositive(_mm512_sub_ps(x0, mv)));
    const __m512 e1 = _mm512_maskz_mov_ps(k1, exp2_nonpositive(_mm512_sub_ps(x1, mv)));
    l[r] += _mm512_reduce_add_ps(_mm512_add_ps(e0, e1));
    _mm512_storeu_si512(wr, as_i(_mm512_cvtne2ps_pbh(e1, e0)));
  }
}

void weighted_values(float* acc, int64_t rows, const uint32_t* w, const uint32_t* vp, int64_t d) {
  constexpr int R = 3;  // R x 8 accumulators, a value vector and R broadcasts fit the 32 registers
  int64_t r = 0;
  for (; r + R <= rows; r += R) weighted_block<R>(acc + r * d, d, w + r * 16, vp);
  for (; r < rows; ++r) weighted_block<1>(acc + r * d, d, w + r * 16, vp);
}

}  // namespace dot_attention
OPCHAIN_TARGET_END()
#else
namespace dot_attention {
void round_rows(const float* const*, int64_t, int64_t, uint16_t*) {}
void pack_values(const uint16_t* const*, int64_t, int64_t, uint32_t*) {}
void scores(const uint16_t*, int64_t, const uint32_t*, int64_t, float*, int64_t) {}
void softmax_weights(const float*, int64_t, int64_t, const int64_t*, float, float*, float*, float*, int64_t,
                     uint32_t*) {}
void weighted_values(float*, int64_t, const uint32_t*, const uint32_t*, int64_t) {}
}  // namespace dot_attention
#endif

}  // namespace opchain::cpu
