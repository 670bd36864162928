// The SIMD code paths of the cpu vendor: simd_impl.inc compiled once per ISA, each in its own target
// region, so the build needs no -march flag; the path is chosen at run time (cpu_kernels.h).
#include "vendors/cpu/simd.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"

// Generic: GCC vector extensions, 4 lanes (SSE2 on x86-64, NEON on arm64). No FMA.
namespace opchain::cpu::generic {
typedef float vec __attribute__((vector_size(16)));
typedef uint32_t vecu __attribute__((vector_size(16)));
constexpr int64_t kLanes = 4;
static inline vec vzero() { return vec{0.0f, 0.0f, 0.0f, 0.0f}; }
static inline vec vset1(float a) { return vec{a, a, a, a}; }
static inline vec vload(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void vstore(float* p, vec v) { std::memcpy(p, &v, sizeof v); }
static inline vec vload_bf16(const uint16_t* p) {
  vecu u = {p[0], p[1], p[2], p[3]};
  u <<= 16;
  vec v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
static inline vec vload_f16(const uint16_t* p) {
  return vec{f16_to_f32_fast(p[0]), f16_to_f32_fast(p[1]), f16_to_f32_fast(p[2]), f16_to_f32_fast(p[3])};
}
static inline vec vload_f8e4m3(const uint8_t* p) {
  return vec{f8e4m3_to_f32(p[0]), f8e4m3_to_f32(p[1]), f8e4m3_to_f32(p[2]), f8e4m3_to_f32(p[3])};
}
static inline vec vload_i8(const int8_t* p) {
  return vec{static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]), static_cast<float>(p[3])};
}
static inline vec vsub(vec a, vec b) { return a - b; }
static inline vec vfma(vec a, vec b, vec acc) { return acc + a * b; }
static inline vec vmul(vec a, vec b) { return a * b; }
static inline vec vmax(vec a, vec b) { return a > b ? a : b; }
// 2^n for integral n in [-126, 127], and x rounded to the nearest integer (ties to even).
static inline vec vpow2n(vec n) {
  typedef int32_t veci __attribute__((vector_size(16)));
  const veci bits = (__builtin_convertvector(n, veci) + 127) << 23;
  vec v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
static inline vec vround(vec x) {
  return vec{std::nearbyint(x[0]), std::nearbyint(x[1]), std::nearbyint(x[2]), std::nearbyint(x[3])};
}
static inline float vreduce(vec v) { return (v[0] + v[2]) + (v[1] + v[3]); }
static inline void vkeep(vec&) {}
// v[i][j] <- v[j][i]: kLanes vectors of kLanes lanes transposed in registers (attention's key chunks).
static inline void vtranspose(vec (&v)[kLanes]) {
  vec t[kLanes];
  for (int i = 0; i < kLanes; ++i)
    for (int j = 0; j < kLanes; ++j) t[i][j] = v[j][i];
  for (int i = 0; i < kLanes; ++i) v[i] = t[i];
}
// Decode attention's lane moves (decode_attention_impl.inc says what each is for).
template <int B>
static inline vec vbcast(const float* p) {
  return vec{p[0], p[1 % B], p[2 % B], p[3 % B]};
}
static inline vec vpairsum(vec a, vec b) { return vec{a[0] + a[1], a[2] + a[3], b[0] + b[1], b[2] + b[3]}; }
template <int W>
static inline vec vswap(vec v) {
  return W == 1 ? vec{v[1], v[0], v[3], v[2]} : vec{v[2], v[3], v[0], v[1]};
}
static inline void vload_bf16x2(const uint16_t* p, vec& even, vec& odd) {
  const vecu e = vecu{p[0], p[2], p[4], p[6]} << 16, o = vecu{p[1], p[3], p[5], p[7]} << 16;
  std::memcpy(&even, &e, sizeof even);
  std::memcpy(&odd, &o, sizeof odd);
}
#include "vendors/cpu/simd_impl.inc"
// (after simd_impl.inc, whose helpers it uses)
#include "vendors/cpu/decode_attention_impl.inc"
const SimdKernels kKernels = {Isa::Generic,
                              gemm_tile<DType::F32>,
                              gemm_tile<DType::BF16>,
                              gemm_tile<DType::F16>,
                              dot,
                              dot_block,
                              axpy_multi,
                              scale,
                              exp_shifted,
                              scores_block,
                              axpy_rows,
                              silu_mul,
                              sigmoid_mul,
                              delta_rule_step,
                              conv_silu_row,
                              transpose_keys,
                              widen_bf16,
                              widen_f8e4m3,
                              dequantize_i8,
                              scale_max,
                              exp_shifted_sum,
                              softmax_chunk_rows,
                              decode_attention};
}  // namespace opchain::cpu::generic

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("avx2,fma,f16c")
// AVX2 + FMA: 8 lanes.
namespace opchain::cpu::avx2 {
using vec = __m256;
constexpr int64_t kLanes = 8;
static inline vec vzero() { return _mm256_setzero_ps(); }
static inline vec vset1(float a) { return _mm256_set1_ps(a); }
static inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec vload_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
// e4m3 codes as f32, exactly as f8e4m3_to_f32: the exponent rebiased in integers (normal codes), 2^-6
// (1 + m/8) - 2^-6 for subnormal ones (exact), NaN for 0x7f.
static inline vec vload_f8e4m3(const uint8_t* p) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i mag = _mm256_and_si256(c, _mm256_set1_epi32(0x7f)), t = _mm256_slli_epi32(mag, 20);
  const __m256 normal = _mm256_castsi256_ps(_mm256_add_epi32(t, _mm256_set1_epi32(120 << 23)));
  const __m256 sub =
      _mm256_sub_ps(_mm256_castsi256_ps(_mm256_add_epi32(t, _mm256_set1_epi32(121 << 23))), _mm256_set1_ps(0.015625f));
  const __m256i is_sub = _mm256_cmpeq_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x78)), _mm256_setzero_si256());
  const __m256i is_nan = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f));
  __m256 v = _mm256_blendv_ps(normal, sub, _mm256_castsi256_ps(is_sub));
  v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), _mm256_castsi256_ps(is_nan));
  return _mm256_or_ps(v, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24)));
}
static inline vec vload_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline vec vfma(vec a, vec b, vec acc) { return _mm256_fmadd_ps(a, b, acc); }
static inline vec vmul(vec a, vec b) { return _mm256_mul_ps(a, b); }
static inline vec vsub(vec a, vec b) { return _mm256_sub_ps(a, b); }
static inline vec vload_i8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
static inline vec vmax(vec a, vec b) { return _mm256_max_ps(a, b); }
static inline vec vpow2n(vec n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
static inline vec vround(vec x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline void vkeep(vec& v) { asm("" : "+x"(v)); }
// v[i][j] <- v[j][i] for the 8 x 8 block (unpack pairs, then 64-bit pairs, then 128-bit halves).
static inline void vtranspose(vec (&v)[kLanes]) {
  __m256 a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
    a[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    b[i] = _mm256_shuffle_ps(a[i], a[i + 2], 0x44);
    b[i + 1] = _mm256_shuffle_ps(a[i], a[i + 2], 0xEE);
    b[i + 2] = _mm256_shuffle_ps(a[i + 1], a[i + 3], 0x44);
    b[i + 3] = _mm256_shuffle_ps(a[i + 1], a[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2f128_ps(b[i], b[i + 4], 0x20);
    v[i + 4] = _mm256_permute2f128_ps(b[i], b[i + 4], 0x31);
  }
}
static inline float vreduce(vec v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}
template <int B>
static inline vec vbcast(const float* p) {
  if constexpr (B == 1) return _mm256_broadcast_ss(p);
  if constexpr (B == 2) return _mm256_castpd_ps(_mm256_broadcast_sd(reinterpret_cast<const double*>(p)));
  if constexpr (B == 4) return _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p));
  if constexpr (B == 8) return vload(p);
}
// hadd pairs within 128-bit halves ([a01 a23 b01 b23 | a45 a67 b45 b67]); the 64-bit permute orders them.
static inline vec vpairsum(vec a, vec b) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_hadd_ps(a, b)), 0xD8));
}
template <int W>
static inline vec vswap(vec v) {
  if constexpr (W == 1) return _mm256_permute_ps(v, 0xB1);
  if constexpr (W == 2) return _mm256_permute_ps(v, 0x4E);
  if constexpr (W == 4) return _mm256_permute2f128_ps(v, v, 0x01);
}
static inline void vload_bf16x2(const uint16_t* p, vec& even, vec& odd) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
  odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}
#include "vendors/cpu/simd_impl.inc"
// (after simd_impl.inc, whose helpers it uses)
#include "vendors/cpu/decode_attention_impl.inc"
const SimdKernels kKernels = {Isa::Avx2,
                              gemm_tile<DType::F32>,
                              gemm_tile<DType::BF16>,
                              gemm_tile<DType::F16>,
                              dot,
                              dot_block,
                              axpy_multi,
                              scale,
                              exp_shifted,
                              scores_block,
                              axpy_rows,
                              silu_mul,
                              sigmoid_mul,
                              delta_rule_step,
                              conv_silu_row,
                              transpose_keys,
                              widen_bf16,
                              widen_f8e4m3,
                              dequantize_i8,
                              scale_max,
                              exp_shifted_sum,
                              softmax_chunk_rows,
                              decode_attention};
}  // namespace opchain::cpu::avx2
OPCHAIN_TARGET_END()

OPCHAIN_TARGET_BEGIN("avx512f,avx2,fma,f16c")
// AVX-512F: 16 lanes. (avx512_bf16's dot instructions would round the f32 activations to bf16, which
// the f32-accumulation contract of linear does not allow, so bf16 weights are widened instead.)
namespace opchain::cpu::avx512 {
using vec = __m512;
constexpr int64_t kLanes = 16;
static inline vec vzero() { return _mm512_setzero_ps(); }
static inline vec vset1(float a) { return _mm512_set1_ps(a); }
static inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec vload_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// As the avx2 one (see there).
static inline vec vload_f8e4m3(const uint8_t* p) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi32(0x7f)), t = _mm512_slli_epi32(mag, 20);
  const __m512 normal = _mm512_castsi512_ps(_mm512_add_epi32(t, _mm512_set1_epi32(120 << 23)));
  const __m512 sub =
      _mm512_sub_ps(_mm512_castsi512_ps(_mm512_add_epi32(t, _mm512_set1_epi32(121 << 23))), _mm512_set1_ps(0.015625f));
  const __mmask16 is_sub = _mm512_testn_epi32_mask(c, _mm512_set1_epi32(0x78));
  const __mmask16 is_nan = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7f));
  __m512 v = _mm512_mask_blend_ps(is_sub, normal, sub);
  v = _mm512_mask_blend_ps(is_nan, v, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
  return _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(v), _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 24)));
}
static inline vec vload_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
static inline vec vfma(vec a, vec b, vec acc) { return _mm512_fmadd_ps(a, b, acc); }
static inline vec vmul(vec a, vec b) { return _mm512_mul_ps(a, b); }
static inline vec vsub(vec a, vec b) { return _mm512_sub_ps(a, b); }
static inline vec vload_i8(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
static inline vec vmax(vec a, vec b) { return _mm512_max_ps(a, b); }
static inline vec vpow2n(vec n) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
static inline vec vround(vec x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline void vkeep(vec& v) { asm("" : "+v"(v)); }
// v[i][j] <- v[j][i] for the 16 x 16 block: within each 128-bit lane as the 8-wide transpose does, then
// the 4 x 4 block of lanes by two rounds of vshuff32x4.
static inline void vtranspose(vec (&v)[kLanes]) {
  __m512 a[16], b[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    a[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; i += 4) {
    b[i] = _mm512_shuffle_ps(a[i], a[i + 2], 0x44);
    b[i + 1] = _mm512_shuffle_ps(a[i], a[i + 2], 0xEE);
    b[i + 2] = _mm512_shuffle_ps(a[i + 1], a[i + 3], 0x44);
    b[i + 3] = _mm512_shuffle_ps(a[i + 1], a[i + 3], 0xEE);
  }
  // Lane L of b[4q + r] is now rows 4q..4q+3 at column 4L + r; lane L' of the result v[4L + r] must be
  // lane L of b[4L' + r]: a 4 x 4 transpose of 128-bit lanes.
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i) {
    a[i] = _mm512_shuffle_f32x4(b[i], b[i + 4], 0x88);
    a[i + 4] = _mm512_shuffle_f32x4(b[i], b[i + 4], 0xDD);
    a[i + 8] = _mm512_shuffle_f32x4(b[i + 8], b[i + 12], 0x88);
    a[i + 12] = _mm512_shuffle_f32x4(b[i + 8], b[i + 12], 0xDD);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm512_shuffle_f32x4(a[i], a[i + 8], 0x88);
    v[i + 8] = _mm512_shuffle_f32x4(a[i], a[i + 8], 0xDD);
    v[i + 4] = _mm512_shuffle_f32x4(a[i + 4], a[i + 12], 0x88);
    v[i + 12] = _mm512_shuffle_f32x4(a[i + 4], a[i + 12], 0xDD);
  }
}
static inline float vreduce(vec v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}
template <int B>
static inline vec vbcast(const float* p) {
  if constexpr (B == 1) return _mm512_set1_ps(*p);
  if constexpr (B == 2) {
    double pair;
    std::memcpy(&pair, p, sizeof pair);
    return _mm512_castpd_ps(_mm512_set1_pd(pair));
  }
  if constexpr (B == 4) return _mm512_broadcast_f32x4(_mm_loadu_ps(p));
  if constexpr (B == 8)
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd(reinterpret_cast<const double*>(p))));
  if constexpr (B == 16) return vload(p);
}
static inline vec vpairsum(vec a, vec b) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return _mm512_add_ps(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
}
template <int W>
static inline vec vswap(vec v) {
  if constexpr (W == 1) return _mm512_permute_ps(v, 0xB1);
  if constexpr (W == 2) return _mm512_permute_ps(v, 0x4E);
  if constexpr (W == 4) return _mm512_shuffle_f32x4(v, v, 0xB1);
  if constexpr (W == 8) return _mm512_shuffle_f32x4(v, v, 0x4E);
}
static inline void vload_bf16x2(const uint16_t* p, vec& even, vec& odd) {
  const __m512i raw = _mm512_loadu_si512(p);
  even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
  odd = _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
// v rounded to bf16 as vcvtne2ps2bf16 rounds (the Avx512Bf16 tier's to_bf16), kept as f32: to nearest,
// ties to even; a denormal reads as the zero of its sign; a NaN stays NaN, quieted. Integer lanes, so
// that AVX-512F alone gives that instruction's bits.
static inline vec vround_bf16(vec v) {
  const __m512i b = _mm512_castps_si512(v), high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512i magnitude = _mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), odd), high);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __mmask16 tiny = _mm512_cmplt_epu32_mask(magnitude, _mm512_set1_epi32(0x00800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_and_si512(_mm512_or_si512(b, _mm512_set1_epi32(0x00400000)), high));
  r = _mm512_mask_mov_epi32(r, tiny, _mm512_andnot_si512(magnitude, b));
  return _mm512_castsi512_ps(r);
}
// The 32 floats at p rounded by vround_bf16, split as vload_bf16x2 splits 32 bf16 values.
static inline void vload_bf16_rounded_x2(const float* p, vec& even, vec& odd) {
  const __m512i even_idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd_idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 a = vround_bf16(_mm512_loadu_ps(p)), b = vround_bf16(_mm512_loadu_ps(p + 16));
  even = _mm512_permutex2var_ps(a, even_idx, b);
  odd = _mm512_permutex2var_ps(a, odd_idx, b);
}
#define OPCHAIN_SIMD_PAIR_ORDER 1
#include "vendors/cpu/simd_impl.inc"
#undef OPCHAIN_SIMD_PAIR_ORDER
// (after simd_impl.inc, whose helpers it uses)
#include "vendors/cpu/decode_attention_impl.inc"
static void gemm_bf16_pair_order(const GemmTile& t) { gemm_tile_packed<DType::BF16, PairOrder>(t); }
const SimdKernels kKernels = {Isa::Avx512,
                              gemm_tile<DType::F32>,
                              gemm_tile<DType::BF16>,
                              gemm_tile<DType::F16>,
                              dot,
                              dot_block,
                              axpy_multi,
                              scale,
                              exp_shifted,
                              scores_block,
                              axpy_rows,
                              silu_mul,
                              sigmoid_mul,
                              delta_rule_step,
                              conv_silu_row,
                              transpose_keys,
                              widen_bf16,
                              widen_f8e4m3,
                              dequantize_i8,
                              scale_max,
                              exp_shifted_sum,
                              softmax_chunk_rows,
                              decode_attention};
}  // namespace opchain::cpu::avx512
OPCHAIN_TARGET_END()

#endif  // OPCHAIN_CPU_X86

namespace opchain::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Generic:
      return "generic";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx512Bf16:
      return "avx512bf16";
    case Isa::Amx:
      return "amx";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Generic:
      return true;
#if OPCHAIN_CPU_X86
    case Isa::Avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      __builtin_cpu_init();  // checks the OS saves zmm state too
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512Bf16:
      return isa_supported(Isa::Avx512) && bf16_dot_supported();
    case Isa::Amx:
      return bf16_dot_supported() && amx_supported();
#else
    default:
      return false;
#endif
  }
  return false;
}

namespace {

Isa best_isa() {
  if (isa_supported(Isa::Amx)) return Isa::Amx;
  if (isa_supported(Isa::Avx512Bf16)) return Isa::Avx512Bf16;
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Generic;
}

// OPCHAIN_CPU_ISA picks a tier; a name that is no tier, or a tier this CPU lacks, is said on stderr (once,
// the tier is picked once) rather than silently replaced: a benchmark of the wrong tier looks plausible.
Isa detect_isa() {
  const Isa best = best_isa();
  const char* env = std::getenv("OPCHAIN_CPU_ISA");
  if (!env || !*env) return best;
  for (Isa i : kAllIsas) {
    if (std::string_view(env) != isa_name(i)) continue;
    if (isa_supported(i)) return i;
    std::fprintf(stderr, "opchain: OPCHAIN_CPU_ISA=%s: this CPU lacks that tier; using %s\n", env, isa_name(best));
    return best;
  }
  std::fprintf(stderr, "opchain: OPCHAIN_CPU_ISA=%s names no tier (generic, avx2, avx512, avx512bf16, amx); using %s\n",
               env, isa_name(best));
  return best;
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(detect_isa())};
  return slot;
}

}  // namespace

Isa active_isa() { return static_cast<Isa>(isa_slot().load(std::memory_order_relaxed)); }

namespace {
std::atomic<int64_t>& narrow_packed_slot() {
  static std::atomic<int64_t> slot{[] {
#if OPCHAIN_CPU_X86
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") ? int64_t{5} : int64_t{16};
#else
    return int64_t{16};
#endif
  }()};
  return slot;
}
}  // namespace

int64_t narrow_packed_min_rows() { return narrow_packed_slot().load(std::memory_order_relaxed); }
void set_narrow_packed_min_rows(int64_t rows) { narrow_packed_slot().store(rows, std::memory_order_relaxed); }

bool set_active_isa(Isa isa) {
  if (!isa_supported(isa) || !simd_for(isa)) return false;
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

const SimdKernels* simd_for(Isa isa) {
  switch (isa) {
    case Isa::Generic:
      return &generic::kKernels;
#if OPCHAIN_CPU_X86
    case Isa::Avx2:
      return &avx2::kKernels;
    case Isa::Avx512:
    case Isa::Avx512Bf16:
    case Isa::Amx:
      return &avx512::kKernels;  // the same loops; the bf16 matmul tiles differ (bf16_dot_gemm)
#else
    default:
      return nullptr;
#endif
  }
  return nullptr;
}

const SimdKernels& simd() { return *simd_for(active_isa()); }

GemmTileFn bf16_pair_order_gemm_tile() {
#if OPCHAIN_CPU_X86
  return &avx512::gemm_bf16_pair_order;
#else
  return nullptr;
#endif
}

bool bf16_dot_supported() {
#if OPCHAIN_CPU_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

GemmTileFn bf16_dot_gemm() {
#if OPCHAIN_CPU_X86
  switch (active_isa()) {  // Avx512: none (Note [bf16 dot]); Avx512Bf16 and Amx imply AVX512_BF16
    case Isa::Avx512Bf16:
      return avx512_bf16_gemm_tile(bf16_dot_form());
    case Isa::Amx:
      return &amx_bf16_gemm_tile;  // every row count: Note [AMX tier]
    default:
      return nullptr;
  }
#else
  return nullptr;
#endif
}

}  // namespace opchain::cpu
