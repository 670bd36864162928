// The quantised matmul tiles per ISA (quant_simd.h), each in its own target region (isa_target.h), so the
// build needs no -march flag.
#include "vendors/cpu/quant_simd.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"

namespace opchain::cpu {
namespace {

// Rows of a tile in blocks: R at a time, then one block of R / 2 (R >= 4), then single rows. Each
// element's operations do not depend on the block it falls in.
template <int R, class F>
inline void for_row_blocks(int64_t rows, const F& f) {
  int64_t r = 0;
  for (; r + R <= rows; r += R) f(r, std::integral_constant<int, R>{});
  if constexpr (R >= 4) {
    if (r + R / 2 <= rows) {
      f(r, std::integral_constant<int, R / 2>{});
      r += R / 2;
    }
  }
  for (; r < rows; ++r) f(r, std::integral_constant<int, 1>{});
}

// The decode tiles prefetch the weight rows a few micro-tiles ahead of the ones they read, and only
// within their own tile (the rows past its end are another tile's, most often read by the other core);
// so a tile asks for its first rows up front with this (a tile of 64 rows used to wait on memory for a
// quarter of its weights).
inline void prefetch_lines(const void* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + b, 0, 2);
}

}  // namespace
}  // namespace opchain::cpu

#if OPCHAIN_CPU_X86
// The AVX-512 int8 tile (vpdpbusd, zmm): it needs AVX512_VNNI, not AVX512_BF16, so it serves both the
// Avx512 tier (Cascade Lake and Ice Lake have VNNI without a bf16 dot) and the Avx512Bf16 and Amx tiers.
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
namespace opchain::cpu::avx512int8 {

constexpr int64_t kPfAhead = 4;  // as the int4 tile's (avx512q::kPfAhead)

// vpdpbusd through asm: with the intrinsic GCC 12 keeps the int8 tile's accumulators on the stack.
inline void dpbusd(__m512i& acc, __m512i u8, __m512i s8) { asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8)); }

inline int32_t reduce_epi32(__m512i v) {
  const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

// The weight codes flipped to w + 128 (u8) times the activation codes (s8): sum_k x (w + 128) =
// sum_k x w + 128 sum_k x, and the row's code sum (t.x_sums) takes the 128s and the zero point back out.
// (Flipping the weights rather than the activations needs no weight sums: 4 in 5 vpdpbusd did useful
// work before, every one now.)
template <int R, int C>
inline void int8_micro(const Int8Tile& t, int64_t r0, int64_t c0) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[R][C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][c] = _mm512_setzero_si512();
  const bool prefetch = R <= 2 && c0 + (kPfAhead + 1) * C <= t.cols;  // prefetch_lines
  const int8_t* pf = t.w + (c0 + kPfAhead * C) * t.ldw;
  const int8_t* wp[C];
  const int8_t* xp[R];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) wp[c] = t.w + (c0 + c) * t.ldw;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) xp[r] = t.x + (r0 + r) * t.ldx;
  const int64_t k = t.k;
  for (int64_t i = 0; i < k; i += 64) {
    if (prefetch)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) __builtin_prefetch(pf + i * C + c * 64, 0, 2);
    // Past k the activation codes are zero (Int8Tile::x), so whatever the flipped padding adds is 0.
    const __mmask64 m = k - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (k - i)) - 1;
    __m512i w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) w[c] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, wp[c] + i), flip);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i xs = _mm512_loadu_si512(xp[r] + i);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) dpbusd(acc[r][c], w[c], xs);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const int64_t offset = 128 + (t.w_zeros ? static_cast<int64_t>(t.w_zeros[c0 + c]) : 0);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const int64_t total = static_cast<int64_t>(reduce_epi32(acc[r][c])) - offset * t.x_sums[r0 + r];
      t.out[(r0 + r) * t.ldo + c0 + c] = static_cast<float>(total) * t.x_scales[r0 + r] * t.w_scales[c0 + c];
    }
  }
}

// quantize_row_int8 (core/quant.h) 16 lanes at a time, with the same operations per element: the
// amax, 127 / amax, x * inv rounded to nearest even (the default MXCSR mode, as nearbyint) and
// saturated to int8.
float int8_prepare(const float* x, int64_t k, int8_t* q, int32_t* sum) {
  __m512 amax = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - i)) - 1);
    amax = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + i)), amax);  // a NaN lane keeps amax, as std::max
  }
  const float a = _mm512_reduce_max_ps(amax);
  if (!(a > 0.0f)) {
    std::memset(q, 0, static_cast<size_t>(k));
    *sum = 0;
    return 0.0f;
  }
  const __m512 inv = _mm512_set1_ps(127.0f / a);
  __m512i s = _mm512_setzero_si512();
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - i)) - 1);
    const __m512i v =
        _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv)),
                                          _mm512_set1_epi32(127)),
                         _mm512_set1_epi32(-128));
    _mm512_mask_cvtepi32_storeu_epi8(q + i, m, v);
    s = _mm512_add_epi32(s, v);
  }
  *sum = _mm512_reduce_add_epi32(s);
  return a / 127.0f;
}

void int8_tile(const Int8Tile& t) {
  if (t.rows <= 2) prefetch_lines(t.w, std::min<int64_t>(t.cols, kPfAhead * (t.rows == 1 ? 8 : 4)) * t.ldw);
  if (t.rows == 1) {
    int64_t c = 0;
    for (; c + 8 <= t.cols; c += 8) int8_micro<1, 8>(t, 0, c);
    for (; c < t.cols; ++c) int8_micro<1, 1>(t, 0, c);
    return;
  }
  int64_t c = 0;
  for (; c + 4 <= t.cols; c += 4)
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 4>(t, r, c); });
  for (; c < t.cols; ++c)
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 1>(t, r, c); });
}

}  // namespace opchain::cpu::avx512int8
OPCHAIN_TARGET_END()

namespace opchain::cpu::avx2q {
extern const QuantKernels kKernels;  // the AVX-512 tables' int4_other (below)
}  // namespace opchain::cpu::avx2q

OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vnni,avx2,fma,f16c")
namespace opchain::cpu::avx512q {

#include "vendors/cpu/bf16_dot_forms.inc"

// vcvtne2ps2bf16 itself (RNE; denormal inputs read as zero).
inline __m512i round_pairs_to_bf16(__m512 hi, __m512 lo) {
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

#include "vendors/cpu/int4_avx512_impl.inc"

const QuantKernels kKernels = {kChunk,  2, int4_prepare,    int4_tile, avx512int8::int8_prepare, avx512int8::int8_tile,
                               nullptr, 0, &avx2q::kKernels};

// Isa::Amx: the AMX tile where quant_gemm packed the rows, else the vpdpbusd one (the same bits).
// Problems of fewer than 4 rows stay on vpdpbusd: a 16 x 16 TDPBSSD then does 1 to 3 useful columns in
// 16, and with the weights in L2 the tile's strided loads make it 1.4-2x slower than vpdpbusd at 1-2
// rows (from memory both run at the bandwidth; CpuPerf.DISABLED_QuantInt8Tiles). Both give the same
// bits, so the choice by row count keeps results batch invariant.
void int8_tile_amx(const Int8Tile& t) {
  if (t.xp)
    amx_int8_tile(t);
  else
    avx512int8::int8_tile(t);
}
constexpr int64_t kAmxPackRows = 4;
const QuantKernels kAmxKernels = {
    kChunk,          2, int4_prepare, int4_tile, avx512int8::int8_prepare, int8_tile_amx, amx_int8_pack, kAmxPackRows,
    &avx2q::kKernels};
// The same with int4 (bf16 activations) on the TDPBF16PS tile at every row count (amx_int4_tile: its own
// summation order), where set_amx_int4_enabled chose it.
const QuantKernels kAmxInt4Kernels = {kChunk,
                                      2,
                                      int4_prepare,
                                      amx_int4_tile,
                                      avx512int8::int8_prepare,
                                      int8_tile_amx,
                                      amx_int8_pack,
                                      kAmxPackRows,
                                      &avx2q::kKernels,
                                      amx_pack_pairs};

}  // namespace opchain::cpu::avx512q
OPCHAIN_TARGET_END()

// The Avx512 tier's int4 tile (Skylake-SP to Ice Lake: AVX-512 without AVX512_BF16): avx512q's FMA form,
// the same operations built without AVX512_BF16, the activations rounded in integer lanes as
// vcvtne2ps2bf16 does. It replaces the AVX2 tile there: twice the lanes per FMA and two operations per
// 32 weights to unpack them instead of two per 8.
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
namespace opchain::cpu::avx512fq {

#define OPCHAIN_BF16_DOT_FMA_ONLY 1
#include "vendors/cpu/bf16_dot_forms.inc"

// vcvtne2ps2bf16 in integer lanes: round to nearest even; a NaN keeps its top bits, made quiet; a zero or
// denormal input becomes the zero of its sign (the instruction reads denormals as zero).
inline __m256i round_to_bf16(__m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i magnitude = _mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), odd), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __mmask16 tiny = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x00800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40)));
  r = _mm512_mask_mov_epi32(r, tiny, _mm512_srli_epi32(_mm512_andnot_si512(magnitude, b), 16));
  return _mm512_cvtepi32_epi16(r);
}
inline __m512i round_pairs_to_bf16(__m512 hi, __m512 lo) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(round_to_bf16(lo)), round_to_bf16(hi), 1);
}

#include "vendors/cpu/int4_avx512_impl.inc"
#undef OPCHAIN_BF16_DOT_FMA_ONLY

}  // namespace opchain::cpu::avx512fq
OPCHAIN_TARGET_END()

// The fp8 tile (quant_simd.h): weight codes unpacked to bf16 as fp8_unpack.inc says, the activations
// laid out to match; vdpbf16ps, so the products are exact and only the f32 sums round.
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16,avx512vbmi,avx2,fma,f16c")
namespace opchain::cpu::avx512fp8 {

#include "vendors/cpu/fp8_unpack.inc"

// An activation row's fp8 codes unpacked as the weights' are: their values as bf16 in the tile's order.
void pack_codes(const uint8_t* codes, int64_t k, uint16_t* out) {
  const Tables& tb = tables();
  for (int64_t c0 = 0; c0 < k; c0 += kFp8Chunk) {
    __m512i a, b;
    unpack(tb, _mm512_loadu_si512(codes + c0), a, b);
    _mm512_storeu_si512(out + c0, a);
    _mm512_storeu_si512(out + c0 + 32, b);
  }
}

// f32_to_f8e4m3 of 16 values already clamped to [-448, 448] (or NaN), in 32-bit lanes: NaN -> 0x7f,
// below 2^-6 steps of 2^-9 rounded to nearest even (a * 512 is exact), else the 20 dropped mantissa bits
// rounded to nearest even by integer addition (a carry moves the exponent), the exponent rebiased.
inline __m512i to_e4m3(__m512 y) {
  const __m512i bits = _mm512_castps_si512(y);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
  const __m512i ax = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __m512 a = _mm512_castsi512_ps(ax);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(ax, 20), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(ax, _mm512_add_epi32(_mm512_set1_epi32(0x7ffff), odd));
  __m512i code = _mm512_sub_epi32(_mm512_srli_epi32(rounded, 20), _mm512_set1_epi32(120 << 3));
  code = _mm512_min_epi32(code, _mm512_set1_epi32(0x7e));  // rounded past 448: saturate
  const __mmask16 sub = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.015625f), _CMP_LT_OQ);
  const __m512 steps = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(512.0f)), _MM_FROUND_TO_NEAREST_INT);
  code = _mm512_mask_mov_epi32(code, sub, _mm512_cvttps_epi32(steps));
  code =
      _mm512_mask_mov_epi32(code, _mm512_cmpgt_epi32_mask(ax, _mm512_set1_epi32(0x7f800000)), _mm512_set1_epi32(0x7f));
  return _mm512_or_si512(code, sign);
}

// quantize_row_fp8 (its scales and codes, bit for bit: the same max, division and clamp per element) with
// the codes then unpacked as pack_codes does, without a pass through memory in between. k and group are
// multiples of kFp8Chunk (the tile's conditions), so there are no partial vectors.
void quantize_pack(const float* x, int64_t k, int64_t group, uint16_t* out, float* scales) {
  const Tables& tb = tables();
  alignas(64) uint8_t codes[kFp8Chunk];
  for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
    const int64_t g1 = std::min(k, g0 + group);
    __m512 m = _mm512_set1_ps(1e-10f);
    // max(|x|, m) keeps m where x is NaN, as std::max(amax, |x|) does.
    for (int64_t i = g0; i < g1; i += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
    const float s = _mm512_reduce_max_ps(m) / 448.0f;
    scales[gi] = s;
    const __m512 vs = _mm512_set1_ps(s), hi = _mm512_set1_ps(448.0f), lo = _mm512_set1_ps(-448.0f);
    for (int64_t c0 = g0; c0 < g1; c0 += kFp8Chunk) {
      for (int j = 0; j < 4; ++j) {
        // min(448, y) then max(-448, .) let a NaN through, as std::clamp does.
        const __m512 y = _mm512_max_ps(lo, _mm512_min_ps(hi, _mm512_div_ps(_mm512_loadu_ps(x + c0 + 16 * j), vs)));
        _mm_store_si128(reinterpret_cast<__m128i*>(codes + 16 * j), _mm512_cvtepi32_epi8(to_e4m3(y)));
      }
      __m512i a, b;
      unpack(tb, _mm512_load_si512(codes), a, b);
      _mm512_storeu_si512(out + c0, a);
      _mm512_storeu_si512(out + c0 + 32, b);
    }
  }
}

inline void dpbf16(__m512& acc, __m512i a, __m512i b) {
  acc = _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
}

constexpr int64_t kPfAhead = 4;  // few-row tiles prefetch the weight rows this many micro-tiles on

// Where a micro-tile's weight vectors come from: the codes, unpacked as they are read (few rows), or a
// panel the tile unpacked once (Panel::at: the two vectors of each chunk of the tile's columns from c0).
// Both give the same vectors, so an output's operations do not depend on its tile.
struct Panel {
  const char* at = nullptr;
  int64_t ld = 0;  // bytes per column: 2 x 64 bytes per chunk
};

template <int R, int C, bool kFromPanel = false>
inline void micro(const Fp8Tile& t, int64_t r0, int64_t c0, Panel panel = {}) {
  const Tables& tb = tables();
  const bool prefetch = !kFromPanel && R <= 4 && c0 + (kPfAhead + 1) * C <= t.cols;  // prefetch_lines
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  const int64_t per_group = t.group / kFp8Chunk, chunks = t.k / kFp8Chunk;
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t g = 0; g < t.groups; ++g) {
    __m512 part[2][R][C];  // the two vectors of each step sum apart: two dot chains per output
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) part[0][r][c] = part[1][r][c] = _mm512_setzero_ps();
    const int64_t last = std::min((g + 1) * per_group, chunks);  // the last group may be short
    for (int64_t chunk = g * per_group; chunk < last; ++chunk) {
      if (prefetch)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk * kFp8Chunk * C + c * 64, 0, 2);
      if constexpr (kFromPanel) {  // one half of the chunk at a time: 4 x 2 blocks fit the registers
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          __m512i xh[R];
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) xh[r] = _mm512_loadu_si512(t.x + (r0 + r) * t.ldx + chunk * kFp8Chunk + 32 * h);
#pragma GCC unroll 8
          for (int c = 0; c < C; ++c) {
            const __m512i w = _mm512_load_si512(panel.at + c * panel.ld + chunk * 128 + 64 * h);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) dpbf16(part[h][r][c], xh[r], w);
          }
        }
        continue;
      }
      __m512i xv[R][2];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        xv[r][0] = _mm512_loadu_si512(t.x + (r0 + r) * t.ldx + chunk * kFp8Chunk);
        xv[r][1] = _mm512_loadu_si512(t.x + (r0 + r) * t.ldx + chunk * kFp8Chunk + 32);
      }
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        __m512i wa, wb;
        unpack(tb, _mm512_loadu_si512(t.codes + (c0 + c) * t.code_ld + chunk * kFp8Chunk), wa, wb);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          dpbf16(part[0][r][c], xv[r][0], wa);
          dpbf16(part[1][r][c], xv[r][1], wb);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float sx = t.x_scales[(r0 + r) * t.groups + g];
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const float sw = t.w_scales[(c0 + c) * t.w_groups + (t.w_groups == 1 ? 0 : g)];
        acc[r][c] = _mm512_fmadd_ps(_mm512_add_ps(part[0][r][c], part[1][r][c]), _mm512_set1_ps(sx * sw), acc[r][c]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) t.out[(r0 + r) * t.ldo + c0 + c] = _mm512_reduce_add_ps(acc[r][c]);
}

// From this many rows a tile unpacks its weights once into a panel and runs 4 x 2 blocks over it, where
// every 4-row block unpacked each weight chunk again (5 vector operations per 64 codes, most of them
// shuffles). Zen 4, 2 threads (CpuPerf.DISABLED_QuantLinearFp8, 16384 x 2048, blocks of 128), two
// alternated rounds: 32 rows 67-75 -> 102-105 GMAC/s, 512 rows 84-86 -> 114-121, 8 rows even (71-77);
// the fp8-block MoE preset's prefill 512 +38-41%, decode batch 32 +12%.
constexpr int64_t kFp8PanelMinRows = 5;

// One row: four weight rows at a time; two: two; three and four: one weight row past all of them; more:
// the panel. Every output is the same operations whatever its tile.
void fp8_tile(const Fp8Tile& t) {
  int64_t c = 0;
  if (t.rows <= 2) {
    prefetch_lines(t.codes, std::min<int64_t>(t.cols, kPfAhead * (t.rows == 1 ? 4 : 2)) * t.code_ld);
    if (t.rows == 1)
      for (; c + 4 <= t.cols; c += 4) micro<1, 4>(t, 0, c);
    else
      for (; c + 2 <= t.cols; c += 2) micro<2, 2>(t, 0, c);
    for (; c < t.cols; ++c)
      for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { micro<decltype(n)::value, 1>(t, r, c); });
    return;
  }
  if (t.rows < kFp8PanelMinRows) {  // 3 or 4 rows: each weight chunk unpacked once for all of them
    prefetch_lines(t.codes, std::min<int64_t>(t.cols, kPfAhead) * t.code_ld);
    for (; c < t.cols; ++c) t.rows == 3 ? micro<3, 1>(t, 0, c) : micro<4, 1>(t, 0, c);
    return;
  }
  const Tables& tb = tables();
  const int64_t chunks = t.k / kFp8Chunk, col_bytes = chunks * 128;
  // Unpacked two columns at a time, just before the rows pass over them: written to and read from L1.
  thread_local std::vector<char> panel_buf;
  char* panel = scratch_aligned(panel_buf, static_cast<size_t>(2 * col_bytes));
  // The codes come from memory (a tile reads each weight row once): each unpack prefetches the columns
  // two pairs on, so they arrive while the row blocks run over this pair's panel.
  const uint8_t* codes_end = t.codes + t.cols * t.code_ld;
  auto unpack_cols = [&](int64_t c0, int64_t n) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const uint8_t* ahead = t.codes + (c0 + j + 4) * t.code_ld + chunk * kFp8Chunk;
        if (ahead < codes_end) __builtin_prefetch(ahead, 0, 2);
        __m512i a, b;
        unpack(tb, _mm512_loadu_si512(t.codes + (c0 + j) * t.code_ld + chunk * kFp8Chunk), a, b);
        _mm512_store_si512(panel + j * col_bytes + chunk * 128, a);
        _mm512_store_si512(panel + j * col_bytes + chunk * 128 + 64, b);
      }
  };
  const Panel from{panel, col_bytes};
  for (; c + 2 <= t.cols; c += 2) {
    unpack_cols(c, 2);
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { micro<decltype(n)::value, 2, true>(t, r, c, from); });
  }
  for (; c < t.cols; ++c) {
    unpack_cols(c, 1);
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { micro<decltype(n)::value, 1, true>(t, r, c, from); });
  }
}

}  // namespace opchain::cpu::avx512fp8
OPCHAIN_TARGET_END()

OPCHAIN_TARGET_BEGIN("avx2,fma,f16c")
namespace opchain::cpu::avx2q {

constexpr int64_t kChunk = 16;  // int4 channels per step: 8 code bytes
constexpr int64_t kPfAhead = 4;

inline float reduce_ps(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

inline int32_t reduce_epi32(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  const __m128i s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1));
  return _mm_cvtsi128_si32(s1);
}

// Two chunk layouts, as avx512q has. Narrow (16 channels, 8 code bytes; k and the groups multiples of 16):
// the bytes widened to int32 lanes, the codes less the zero converted to f32. Wide (64 channels, 32 code
// bytes; k and the groups multiples of 64): the bytes read as they are and made into f32 16-bit halves
// by bit operations and byte interleaves (NibbleF32 below). Narrow spent 4.5 vector operations per 8
// weights besides the FMA and held decode to a third of the memory bandwidth; Wide spends 2. The
// activations are laid out to match: vector j of a chunk holds the channels its weights hold.
constexpr int64_t kWideChunk = 64;
inline bool wide_layout(int64_t k, int64_t group) { return group % kWideChunk == 0 && k % kWideChunk == 0; }
// Vector j = 4 S + 2 U + E of a Wide chunk, lane i = 4 l + d (l: the 128-bit half) holds nibble S of code
// byte 16 l + 8 U + 2 d + E (NibbleF32's order of operations).
inline int64_t wide_channel(int64_t j, int64_t i) {
  return 2 * (16 * (i / 4) + 8 * ((j / 2) % 2) + 2 * (i % 4) + j % 2) + j / 4;
}

void int4_prepare(const float* x, int64_t k, int64_t group, void* out, float* sums) {
  float* o = static_cast<float*>(out);
  if (wide_layout(k, group)) {
    for (int64_t c = 0; c < k; c += kWideChunk)
      for (int64_t j = 0; j < 8; ++j)
        for (int64_t i = 0; i < 8; ++i) o[c + 8 * j + i] = bf16_to_f32(f32_to_bf16(x[c + wide_channel(j, i)]));
  } else {
    for (int64_t c = 0; c < k; c += kChunk)
      for (int64_t i = 0; i < kChunk / 2; ++i) {
        o[c + i] = bf16_to_f32(f32_to_bf16(x[c + 2 * i]));
        o[c + kChunk / 2 + i] = bf16_to_f32(f32_to_bf16(x[c + 2 * i + 1]));
      }
  }
  for (int64_t g0 = 0; g0 < k; g0 += group) {
    float s = 0.0f;
    for (int64_t i = g0; i < std::min(k, g0 + group); ++i) s += bf16_to_f32(f32_to_bf16(x[i]));
    sums[g0 / group] = s;
  }
}

template <int R, int C>
inline void int4_micro_narrow(const Int4Tile& t, int64_t r0, int64_t c0) {
  const __m256i low4 = _mm256_set1_epi32(0x0f);
  const int64_t per_group = t.group_size / kChunk;
  // Few-row tiles prefetch the weight rows kPfAhead micro-tiles on themselves, as the AVX-512 tile does
  // (the hardware prefetcher alone left decode at a third of the bandwidth there).
  const bool prefetch = R <= 2 && c0 + (kPfAhead + 1) * C <= t.cols;  // prefetch_lines
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  __m256 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t g = 0; g < t.groups; ++g) {
    // Even and odd channels sum apart, so that two FMA chains per output hide the FMA latency.
    __m256 even[R][C], odd[R][C];
    __m256i zc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      zc[c] = _mm256_set1_epi32(t.zeros ? static_cast<int>(t.zeros[(c0 + c) * t.groups + g]) : 8);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) even[r][c] = odd[r][c] = _mm256_setzero_ps();
    }
    const int64_t last = std::min((g + 1) * per_group, t.k / kChunk);  // the last group may be short
    for (int64_t chunk = g * per_group; chunk < last; ++chunk) {
      if (prefetch && chunk % 8 == 0)  // 8 chunks: a line of each of the C rows
        for (int64_t b = 0; b < C * 64; b += 64) __builtin_prefetch(pf + chunk / 8 * C * 64 + b, 0, 2);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m256i v = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(t.codes + (c0 + c) * t.code_ld + chunk * (kChunk / 2))));
        const __m256 wlo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v, low4), zc[c]));
        const __m256 whi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v, 4), zc[c]));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const float* xr = static_cast<const float*>(t.x) + (r0 + r) * t.ldx + chunk * kChunk;
          even[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xr), wlo, even[r][c]);
          odd[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + kChunk / 2), whi, odd[r][c]);
        }
      }
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 s = _mm256_set1_ps(t.scales[(c0 + c) * t.groups + g]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(_mm256_add_ps(even[r][c], odd[r][c]), s, acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) t.out[(r0 + r) * t.ldo + c0 + c] = reduce_ps(acc[r][c]);
}

void int4_tile_narrow(const Int4Tile& t) {
  if (t.rows <= 2) {
    prefetch_lines(t.codes, std::min<int64_t>(t.cols, kPfAhead * 4) * t.code_ld);
    int64_t c = 0;
    for (; c + 4 <= t.cols; c += 4) {
      if (t.rows == 1)
        int4_micro_narrow<1, 4>(t, 0, c);
      else
        int4_micro_narrow<2, 4>(t, 0, c);
    }
    for (; c < t.cols; ++c)
      for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { int4_micro_narrow<decltype(n)::value, 1>(t, r, c); });
    return;
  }
  int64_t c = 0;
  for (; c + 2 <= t.cols; c += 2)
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { int4_micro_narrow<decltype(n)::value, 2>(t, r, c); });
  for (; c < t.cols; ++c)
    for_row_blocks<4>(t.rows, [&](int64_t r, auto n) { int4_micro_narrow<decltype(n)::value, 1>(t, r, c); });
}

// Wide: each code byte's low (S = 0) or high (S = 1) nibble shifted and masked in place to bits 5..2,
// vpunpck{l,h}bw (U = 0, 1) pairs these bytes with 0x42 into the bf16 32 + q (exponent 5, q in mantissa
// bits 5..2), and each 32-bit lane's two bf16 become f32 by shifting the low one up (E =
// 0) or clearing it (E = 1). Two vector operations per 8 weights: the shifts and interleaves run beside
// the FMAs on Zen 4 where ands compete with them, and 16 + q would need an or as well (0x80 | q << 3,
// -10% in L2). The products x (32 + q) of the bf16-rounded activations are exact; sum_k x (q - z) =
// sum_k x (32 + q) - (32 + z) sum_k x.
constexpr float kNibbleOffset = 32.0f;
struct NibbleF32 {
  __m256i mask, exp, high;
  NibbleF32()
      : mask(_mm256_set1_epi8(0x3c)),
        exp(_mm256_set1_epi8(0x42)),
        high(_mm256_set1_epi32(static_cast<int>(0xffff0000u))) {}
  template <int S>
  inline __m256i bytes(__m256i v) const {
    return _mm256_and_si256(S == 0 ? _mm256_slli_epi32(v, 2) : _mm256_srli_epi32(v, 2), mask);
  }
  template <int U>
  inline __m256i words(__m256i b) const {
    return U == 0 ? _mm256_unpacklo_epi8(b, exp) : _mm256_unpackhi_epi8(b, exp);
  }
  template <int E>
  inline __m256 vec(__m256i w) const {
    return _mm256_castsi256_ps(E == 0 ? _mm256_slli_epi32(w, 16) : _mm256_and_si256(w, high));
  }
};

// Vectors J and J + 1 (S = J / 4, U = J / 2 % 2) of every column's chunk times each row's matching
// activation vectors, into the outputs' two partial sums (by E): two FMA chains per output, in every
// tile shape (four chains measured no faster at one row and spilled at four rows).
template <int J, int R, int C>
inline void wide_dots(const NibbleF32& nb, const __m256i (&lanes)[C], const float* const (&x)[R], int64_t chunk,
                      __m256 (&part)[2][R][C]) {
  if constexpr (J < 8) {
    constexpr int S = J / 4, U = (J / 2) % 2;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256i w = nb.words<U>(nb.bytes<S>(lanes[c]));
      const __m256 lo = nb.vec<0>(w), hi = nb.vec<1>(w);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const float* xc = x[r] + chunk * kWideChunk;
        part[0][r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xc + 8 * J), lo, part[0][r][c]);
        part[1][r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xc + 8 * (J + 1)), hi, part[1][r][c]);
      }
    }
    wide_dots<J + 2, R, C>(nb, lanes, x, chunk, part);
  }
}

// The same products for one activation row, a column's whole chunk at a time: wide_dots keeps every
// column's codes and both activation vectors of a step live across the columns, which with 8 partial sums
// is more than AVX2's 16 registers (the 1 x 4 tile spilled and ran at ~27% of the FMA peak); here the
// activations are reloaded from L1 per column instead. Each output gets the same FMAs in the same order.
template <int C>
inline void wide_dots_by_column(const NibbleF32& nb, const uint8_t* const (&codes)[C], const float* x, int64_t chunk,
                                __m256 (&part)[2][1][C]) {
  const float* xc = x + chunk * kWideChunk;
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const __m256i lanes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[c] + chunk * (kWideChunk / 2)));
    const __m256i b0 = nb.bytes<0>(lanes), b1 = nb.bytes<1>(lanes);
    const __m256i w[4] = {nb.words<0>(b0), nb.words<1>(b0), nb.words<0>(b1), nb.words<1>(b1)};
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      part[0][0][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xc + 16 * j), nb.vec<0>(w[j]), part[0][0][c]);
      part[1][0][c] = _mm256_fmadd_ps(_mm256_loadu_ps(xc + 16 * j + 8), nb.vec<1>(w[j]), part[1][0][c]);
    }
  }
}

// Rows up to which a tile is one pass over the codes, prefetching them (int4_tile_wide).
constexpr int64_t kWideStreamMaxRows = 4;

// out[r, c] = sum_g scale[c, g] sum_{k in g} x (32 + q) - sum_g scale[c, g] (32 + zero[c, g]) x_sum[r, g]:
// the zero terms 8 groups at a time, lane by lane, into the accumulator (wide_zero_terms), then each
// group's dot scaled into it (wide_groups); its lanes are summed at the end (wide_store). The operations
// on an output are the same in every tile shape, and whether or not its groups run in k blocks.
template <int R, int C>
inline void wide_zero_terms(const Int4Tile& t, int64_t r0, int64_t c0, __m256 (&acc)[R][C]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t g0 = 0; g0 < t.groups; g0 += 8) {
    const int n = static_cast<int>(std::min<int64_t>(8, t.groups - g0));
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 xs[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) xs[r] = _mm256_maskload_ps(t.x_sums + (r0 + r) * t.groups + g0, m);
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 z = t.zeros ? _mm256_add_ps(_mm256_maskload_ps(t.zeros + (c0 + c) * t.groups + g0, m),
                                               _mm256_set1_ps(kNibbleOffset))
                               : _mm256_set1_ps(kNibbleOffset + 8.0f);
      const __m256 sz = _mm256_mul_ps(_mm256_maskload_ps(t.scales + (c0 + c) * t.groups + g0, m), z);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fnmadd_ps(sz, xs[r], acc[r][c]);
    }
  }
}

// Groups [g_begin, g_end) of the outputs' dots into acc; `prefetch` streams the codes kPfAhead
// micro-tiles ahead (prefetch_lines).
template <int R, int C>
inline void wide_groups(const Int4Tile& t, int64_t r0, int64_t c0, int64_t g_begin, int64_t g_end, bool prefetch,
                        __m256 (&acc)[R][C]) {
  const NibbleF32 nb;
  const int64_t per_group = t.group_size / kWideChunk, chunks = t.k / kWideChunk;
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  const float* x[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) x[r] = static_cast<const float*>(t.x) + (r0 + r) * t.ldx;
  const uint8_t* codes[C];
  const float* sc[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    codes[c] = t.codes + (c0 + c) * t.code_ld;
    sc[c] = t.scales + (c0 + c) * t.groups;
  }
  for (int64_t g = g_begin; g < g_end; ++g) {
    __m256 part[2][R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) part[0][r][c] = part[1][r][c] = _mm256_setzero_ps();
    const int64_t last = std::min((g + 1) * per_group, chunks);  // the last group may be short
    for (int64_t chunk = g * per_group; chunk < last; ++chunk) {
      if (prefetch && chunk % 2 == 0)  // 2 chunks: a line of each of the C rows, kPfAhead micro-tiles on
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk / 2 * C * 64 + c * 64, 0, 2);
      if constexpr (R == 1) {
        wide_dots_by_column<C>(nb, codes, x[0], chunk, part);
      } else {
        __m256i lanes[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
          lanes[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[c] + chunk * (kWideChunk / 2)));
        wide_dots<0, R, C>(nb, lanes, x, chunk, part);
      }
    }
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const __m256 sv = _mm256_set1_ps(sc[c][g]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        acc[r][c] = _mm256_fmadd_ps(_mm256_add_ps(part[0][r][c], part[1][r][c]), sv, acc[r][c]);
    }
  }
}

template <int R, int C>
inline void wide_store(const Int4Tile& t, int64_t r0, int64_t c0, const __m256 (&acc)[R][C]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) t.out[(r0 + r) * t.ldo + c0 + c] = reduce_ps(acc[r][c]);
}

template <int R, int C>
inline void int4_micro_wide(const Int4Tile& t, int64_t r0, int64_t c0) {
  const bool prefetch = t.rows <= kWideStreamMaxRows && c0 + (kPfAhead + 1) * C <= t.cols;  // prefetch_lines
  __m256 acc[R][C];
  wide_zero_terms<R, C>(t, r0, c0, acc);
  wide_groups<R, C>(t, r0, c0, 0, t.groups, prefetch, acc);
  wide_store<R, C>(t, r0, c0, acc);
}

// Channels per k block of a block of rows past kWideStreamMaxRows: four rows' activations over 1024
// channels are 16 KB, which stay in L1 while the block's columns pass. Over the whole k they are 40 KB
// (k = 2560) to 156 KB (9728), read again from L2 for every column: that held the 4 x 1 micro-tile to
// about half the FMA rate.
constexpr int64_t kWideKBlock = 1024;
constexpr int64_t kWideColBlock = 64;  // the quantised GEMM's column tile (kColTile)

// R rows from r0 against every column of the tile, k block by k block (whole groups each), the columns'
// accumulators kept in memory between blocks: the same operations on each output as int4_micro_wide<R, 1>.
template <int R>
void int4_rows_wide_kblocked(const Int4Tile& t, int64_t r0) {
  const int64_t groups_per_block = std::max<int64_t>(1, kWideKBlock / t.group_size);
  __m256 acc[kWideColBlock][R][1];
  for (int64_t c0 = 0; c0 < t.cols; c0 += kWideColBlock) {
    const int64_t n = std::min(kWideColBlock, t.cols - c0);
    for (int64_t c = 0; c < n; ++c) wide_zero_terms<R, 1>(t, r0, c0 + c, acc[c]);
    for (int64_t g = 0; g < t.groups; g += groups_per_block)
      for (int64_t c = 0; c < n; ++c)
        wide_groups<R, 1>(t, r0, c0 + c, g, std::min(t.groups, g + groups_per_block), false, acc[c]);
    for (int64_t c = 0; c < n; ++c) wide_store<R, 1>(t, r0, c0 + c, acc[c]);
  }
}

// One row (decode): four weight rows stream at once past the row's activations. 2-4 rows (batched
// decode's experts): one pass of all the rows past one weight row at a time (4 x 1 outputs of two chains
// stay in registers; 2 x 2 ran 5% slower at two rows), prefetching as the 1-row pass does. More rows:
// blocks of four, then one block of the 1-3 rows left, in k blocks (int4_rows_wide_kblocked) while the
// codes come from L2. Every shape unpacks from the codes with the same operations, so no panel is needed
// for batch invariance.
void int4_tile_wide(const Int4Tile& t) {
  if (t.rows <= kWideStreamMaxRows)
    prefetch_lines(t.codes, std::min<int64_t>(t.cols, kPfAhead * (t.rows == 1 ? 4 : 1)) * t.code_ld);
  if (t.rows == 1) {
    int64_t c = 0;
    for (; c + 4 <= t.cols; c += 4) int4_micro_wide<1, 4>(t, 0, c);
    for (; c < t.cols; ++c) int4_micro_wide<1, 1>(t, 0, c);
    return;
  }
  if (t.rows <= kWideStreamMaxRows) {
    for_blocks_of_four(t.rows, [&](int64_t r, auto n) {
      for (int64_t c = 0; c < t.cols; ++c) int4_micro_wide<decltype(n)::value, 1>(t, r, c);
    });
    return;
  }
  for_blocks_of_four(t.rows, [&](int64_t r, auto n) { int4_rows_wide_kblocked<decltype(n)::value>(t, r); });
}

void int4_tile(const Int4Tile& t) {
  if (wide_layout(t.k, t.group_size))
    int4_tile_wide(t);
  else
    int4_tile_narrow(t);
}

// |w| (u8) times sign(x, w) (s8): pairs of products sum to at most 2 * 128 * 127, so vpmaddubsw never
// saturates (activation codes are in [-127, 127]).
template <int R, int C>
inline void int8_micro(const Int8Tile& t, int64_t r0, int64_t c0) {
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256i acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
  alignas(32) int8_t tail[C][32];
  const bool prefetch = R <= 2 && c0 + (kPfAhead + 1) * C <= t.cols;  // prefetch_lines
  const int8_t* pf = t.w + (c0 + kPfAhead * C) * t.ldw;
  for (int64_t i = 0; i < t.k; i += 32) {
    if (prefetch && i % 64 == 0)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) __builtin_prefetch(pf + i * C + c * 64, 0, 2);
    __m256i aw[C], w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const int8_t* src = t.w + (c0 + c) * t.ldw + i;
      if (t.k - i >= 32) {
        w[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      } else {
        std::memset(tail[c], 0, 32);
        std::memcpy(tail[c], src, static_cast<size_t>(t.k - i));
        w[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail[c]));
      }
      aw[c] = _mm256_abs_epi8(w[c]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.x + (r0 + r) * t.ldx + i));
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c)
        acc[r][c] = _mm256_add_epi32(acc[r][c],
                                     _mm256_madd_epi16(_mm256_maddubs_epi16(aw[c], _mm256_sign_epi8(x, w[c])), ones16));
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const int64_t zero = t.w_zeros ? static_cast<int64_t>(t.w_zeros[c0 + c]) : 0;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const int64_t total = static_cast<int64_t>(reduce_epi32(acc[r][c])) - zero * t.x_sums[r0 + r];
      t.out[(r0 + r) * t.ldo + c0 + c] = static_cast<float>(total) * t.x_scales[r0 + r] * t.w_scales[c0 + c];
    }
  }
}

// quantize_row_int8 eight lanes at a time, with the same operations per element (see avx512q).
float int8_prepare(const float* x, int64_t k, int8_t* q, int32_t* sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) amax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), amax);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax);
  float a = 0.0f;
  for (float v : lanes) a = std::max(a, v);
  for (; i < k; ++i) a = std::max(a, std::fabs(x[i]));
  if (!(a > 0.0f)) {
    std::memset(q, 0, static_cast<size_t>(k));
    *sum = 0;
    return 0.0f;
  }
  const float inv_s = 127.0f / a;
  const __m256 inv = _mm256_set1_ps(inv_s);
  __m256i s = _mm256_setzero_si256();
  i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256i v = _mm256_max_epi32(
        _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv)), _mm256_set1_epi32(127)),
        _mm256_set1_epi32(-128));
    s = _mm256_add_epi32(s, v);
    const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(w16, w16));
  }
  int32_t total = reduce_epi32(s);
  for (; i < k; ++i) {
    q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv_s), -128.0f, 127.0f));
    total += q[i];
  }
  *sum = total;
  return a / 127.0f;
}

void int8_tile(const Int8Tile& t) {
  if (t.rows <= 2) prefetch_lines(t.w, std::min<int64_t>(t.cols, kPfAhead * 4) * t.ldw);
  int64_t c = 0;
  for (; c + 4 <= t.cols; c += 4)
    for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 4>(t, r, c); });
  for (; c < t.cols; ++c)
    for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 1>(t, r, c); });
}

const QuantKernels kKernels = {kChunk, 4, int4_prepare, int4_tile, int8_prepare, int8_tile};

}  // namespace opchain::cpu::avx2q
OPCHAIN_TARGET_END()

// AVX-VNNI (VEX vpdpbusd on ymm: Alder Lake and later client cores, Sapphire Rapids, Zen 5): the avx2q
// int8 tile's blocking with one vpdpbusd per 32 products instead of vpmaddubsw + vpmaddwd + vpaddd,
// on the weight codes flipped to w + 128 as avx512q does (the activation codes are signed).
OPCHAIN_TARGET_BEGIN("avx2,fma,f16c,avxvnni")
namespace opchain::cpu::avxvnniq {

template <int R, int C>
inline void int8_micro(const Int8Tile& t, int64_t r0, int64_t c0) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256i acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
  alignas(32) int8_t tail[C][32];
  for (int64_t i = 0; i < t.k; i += 32) {
    __m256i w[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const int8_t* src = t.w + (c0 + c) * t.ldw + i;
      if (t.k - i >= 32) {
        w[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      } else {  // past k the activation codes are zero, so the flipped padding adds nothing
        std::memset(tail[c], 0, 32);
        std::memcpy(tail[c], src, static_cast<size_t>(t.k - i));
        w[c] = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail[c]));
      }
      w[c] = _mm256_xor_si256(w[c], flip);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.x + (r0 + r) * t.ldx + i));
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_dpbusd_avx_epi32(acc[r][c], w[c], x);
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) {
    const int64_t offset = 128 + (t.w_zeros ? static_cast<int64_t>(t.w_zeros[c0 + c]) : 0);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const int64_t total = static_cast<int64_t>(avx2q::reduce_epi32(acc[r][c])) - offset * t.x_sums[r0 + r];
      t.out[(r0 + r) * t.ldo + c0 + c] = static_cast<float>(total) * t.x_scales[r0 + r] * t.w_scales[c0 + c];
    }
  }
}

void int8_tile(const Int8Tile& t) {
  int64_t c = 0;
  for (; c + 4 <= t.cols; c += 4)
    for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 4>(t, r, c); });
  for (; c < t.cols; ++c)
    for_row_blocks<2>(t.rows, [&](int64_t r, auto n) { int8_micro<decltype(n)::value, 1>(t, r, c); });
}

const QuantKernels kKernels = {avx2q::kChunk, 4, avx2q::int4_prepare, avx2q::int4_tile, avx2q::int8_prepare, int8_tile};

}  // namespace opchain::cpu::avxvnniq
OPCHAIN_TARGET_END()

// Isa::Avx512: the FMA form's int4 tile, and the zmm int8 tile where the CPU has AVX512_VNNI (Cascade
// Lake, Ice Lake), else the AVX2 one (Skylake-SP).
namespace opchain::cpu::avx512fq {
const QuantKernels kVnniKernels = {
    kChunk, 2, int4_prepare, int4_tile, avx512int8::int8_prepare, avx512int8::int8_tile, nullptr, 0, &avx2q::kKernels};
const QuantKernels kKernels = {kChunk,  2, int4_prepare,    int4_tile, avx2q::int8_prepare, avx2q::int8_tile,
                               nullptr, 0, &avx2q::kKernels};
}  // namespace opchain::cpu::avx512fq
#endif  // OPCHAIN_CPU_X86

namespace opchain::cpu {

namespace {

std::atomic<bool>& avx_vnni_slot() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("OPCHAIN_CPU_AVXVNNI");
    return avx_vnni_supported() && !(env && std::string_view(env) == "0");
  }()};
  return on;
}

std::atomic<bool>& amx_int4_slot() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("OPCHAIN_CPU_AMX_INT4");
    return env && std::string_view(env) == "1";
  }()};
  return on;
}

}  // namespace

bool amx_int4_enabled() { return amx_int4_slot().load(std::memory_order_relaxed); }
void set_amx_int4_enabled(bool on) { amx_int4_slot().store(on, std::memory_order_relaxed); }

bool avx_vnni_supported() {
#if OPCHAIN_CPU_X86
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
  }();
  return ok;
#else
  return false;
#endif
}

bool avx_vnni_enabled() { return avx_vnni_slot().load(std::memory_order_relaxed); }

bool set_avx_vnni_enabled(bool on) {
  if (on && !avx_vnni_supported()) return false;
  avx_vnni_slot().store(on, std::memory_order_relaxed);
  return true;
}

const Fp8Kernels* fp8_kernels() {
#if OPCHAIN_CPU_X86
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vbmi");
  }();
  static const Fp8Kernels dpbf16{avx512fp8::fp8_tile, avx512fp8::quantize_pack, avx512fp8::pack_codes, nullptr};
  static const Fp8Kernels amx{amx_fp8_tile, avx512fp8::quantize_pack, avx512fp8::pack_codes, amx_pack_pairs};
  if (!has) return nullptr;
  if (active_isa() == Isa::Amx && amx_supported()) return &amx;
  if (active_isa() == Isa::Avx512Bf16 || active_isa() == Isa::Amx) return &dpbf16;
#endif
  return nullptr;
}

void set_int4_form_by_rows(bool on) {
#if OPCHAIN_CPU_X86
  avx512q::g_form_by_rows.store(on, std::memory_order_relaxed);
#else
  (void)on;
#endif
}

const QuantKernels* quant_kernels() {
#if OPCHAIN_CPU_X86
  static const bool avx512_full = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vnni");
  }();
  static const bool avx512_vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
  }();
  static const bool avx512_bw = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }();
  const QuantKernels* avx2 = avx_vnni_enabled() ? &avxvnniq::kKernels : &avx2q::kKernels;
  switch (active_isa()) {
    case Isa::Avx512:
      if (!avx512_bw) return avx2;  // AVX-512F alone (Knights Landing): the AVX2 tiles
      return avx512_vnni ? &avx512fq::kVnniKernels : &avx512fq::kKernels;
    case Isa::Avx512Bf16:
      return avx512_full ? &avx512q::kKernels : avx2;  // AVX512_BF16 without VNNI: the AVX2 tiles
    case Isa::Amx:
      return amx_int4_enabled() ? &avx512q::kAmxInt4Kernels : &avx512q::kAmxKernels;  // the full AVX-512 set too
    case Isa::Avx2:
      return avx2;
    case Isa::Generic:
      return nullptr;
  }
#endif
  return nullptr;
}

}  // namespace opchain::cpu
