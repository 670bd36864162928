// The Int8 precision's int4 tile (quant_simd.h, Int4Int8Tile; Note [Matmul precision]) on AVX2: a chunk
// of 64 channels is 32 code bytes, whose low nibbles (the even channels) and high nibbles (the odd ones)
// become u8 lanes by an and and a shift; vpmaddubsw multiplies them with the activation codes (s8, laid out
// as the even channels' 32 then the odd channels' 32) and sums pairs into s16 (|sum| <= 2 * 15 * 127, no
// saturation); vpmaddwd widens to s32. Every group's dot is exact, so the tile shape, the lane each product
// lands in and the order of the integer sums change nothing: the f32 combine per output is the
// reference's, group by group, and the result its bits.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/quant_simd.h"

#if OPCHAIN_CPU_X86
#include <immintrin.h>

namespace opchain::cpu::avx2q {
float int8_prepare(const float* x, int64_t k, int8_t* q, int32_t* sum);  // quant_simd.cpp: quantize_row_int8's codes
}  // namespace opchain::cpu::avx2q

namespace opchain::cpu {
namespace {

// Int4Int8Kernels::prepare for a tile whose chunks are `Chunk` channels: each group quantised as
// quantize_row_int8 quantises a row, then each chunk's codes laid out as its even channels' then its odd
// channels' (the low and high nibbles of the chunk's code bytes).
template <int64_t Chunk>
void prepare_split(const float* x, int64_t k, int64_t group, int8_t* codes, float* scales, int32_t* sums) {
  alignas(64) int8_t split[Chunk];
  for (int64_t g0 = 0, g = 0; g0 < k; g0 += group, ++g) {
    const int64_t end = std::min(k, g0 + group);  // the last group may be short
    scales[g] = avx2q::int8_prepare(x + g0, end - g0, codes + g0, sums + g);
    for (int64_t c = g0; c < end; c += Chunk) {
      for (int64_t i = 0; i < Chunk / 2; ++i) {
        split[i] = codes[c + 2 * i];
        split[Chunk / 2 + i] = codes[c + 2 * i + 1];
      }
      std::memcpy(codes + c, split, Chunk);
    }
  }
}

// A tile: the few-row tiles (decode, each weight row read once) prefetch their first `pf_cols` weight
// rows, then pass(r, n, few, dots) runs each block of rows (for_blocks_of_four) over every column, the
// group dots of up to `max_outputs` outputs waiting in `dots` (groups x 8 int32 each).
template <class Pass>
void run_tile(const Int4Int8Tile& t, int64_t max_outputs, int64_t pf_cols, const Pass& pass) {
  thread_local std::vector<int32_t> dots_buf;
  int32_t* dots = scratch_aligned(dots_buf, static_cast<size_t>(max_outputs * t.groups * 8));
  const bool few = t.rows <= 4;
  if (few)
    for (int64_t b = 0; b < std::min(t.cols, pf_cols) * t.code_ld; b += 64) __builtin_prefetch(t.codes + b, 0, 2);
  for_blocks_of_four(t.rows, [&](int64_t r, auto n) { pass(r, n, few, dots); });
}

}  // namespace
}  // namespace opchain::cpu

OPCHAIN_TARGET_BEGIN("avx2,fma,f16c")
namespace opchain::cpu::avx2i4i8 {
namespace {

constexpr int64_t kChunk = 64;
// Few-row tiles read each weight row once from memory: they prefetch the rows this many micro-tiles on.
constexpr int64_t kPfAhead = 4;

// The lane sums of eight vectors, in order (integers: exact in any order).
inline __m256i hsum8x8(const __m256i (&v)[8]) {
  const __m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i t0 = _mm256_hadd_epi32(s01, s23), t1 = _mm256_hadd_epi32(s45, s67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20), _mm256_permute2x128_si256(t0, t1, 0x31));
}

// One output from its groups' lane vectors (dots: groups x 8 int32): the reference's f32 operations, the
// products of eight groups at a time in vectors, summed one by one in group order.
inline float combine(const Int4Int8Tile& t, const int32_t* dots, int64_t r, int64_t c) {
  const float* xs = t.x_scales + r * t.groups;
  const int32_t* xsum = t.x_sums + r * t.groups;
  const float* ws = t.scales + c * t.groups;
  const float* zs = t.zeros ? t.zeros + c * t.groups : nullptr;
  float out = 0.0f;
  alignas(32) float p[8];
  for (int64_t g0 = 0; g0 < t.groups; g0 += 8) {
    const int n = static_cast<int>(std::min<int64_t>(8, t.groups - g0));
    __m256i v[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      v[i] = i < n ? _mm256_load_si256(reinterpret_cast<const __m256i*>(dots + (g0 + i) * 8)) : _mm256_setzero_si256();
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 z = zs ? _mm256_maskload_ps(zs + g0, m) : _mm256_set1_ps(8.0f);
    const __m256 x_sum = _mm256_cvtepi32_ps(_mm256_maskload_epi32(xsum + g0, m));
    const __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(hsum8x8(v)), _mm256_mul_ps(z, x_sum));
    const __m256 scale = _mm256_mul_ps(_mm256_maskload_ps(xs + g0, m), _mm256_maskload_ps(ws + g0, m));
    _mm256_store_ps(p, _mm256_mul_ps(d, scale));
    for (int i = 0; i < n; ++i) out += p[i];
  }
  return out;
}

// R rows x C weight rows: each group's dots into s32 lane vectors, kept in `dots` ([R][C][groups][8]) until
// the combine. A column's nibbles are unpacked once for all R rows.
template <int R, int C>
void micro(const Int4Int8Tile& t, int64_t r0, int64_t c0, bool few, int32_t* dots) {
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const int64_t per_group = t.group_size / kChunk, chunks = t.k / kChunk;
  const bool prefetch = few && c0 + (kPfAhead + 1) * C <= t.cols;
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  const int8_t* x[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  for (int64_t g = 0; g < t.groups; ++g) {
    __m256i acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_si256();
    for (int64_t chunk = g * per_group; chunk < std::min((g + 1) * per_group, chunks); ++chunk) {
      if (prefetch && chunk % 2 == 0)  // a line of each of the C rows every two chunks
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk / 2 * C * 64 + c * 64, 0, 2);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.codes + (c0 + c) * t.code_ld + chunk * (kChunk / 2)));
        const __m256i even = _mm256_and_si256(v, low), odd = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const int8_t* xc = x[r] + chunk * kChunk;
          const __m256i pairs = _mm256_add_epi16(
              _mm256_maddubs_epi16(even, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc))),
              _mm256_maddubs_epi16(odd, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc + 32))));
          acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c)
        _mm256_store_si256(reinterpret_cast<__m256i*>(dots + ((r * C + c) * t.groups + g) * 8), acc[r][c]);
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      t.out[(r0 + r) * t.ldo + c0 + c] = combine(t, dots + (r * C + c) * t.groups * 8, r0 + r, c0 + c);
}

// Weight rows per micro-tile: 4 for one row (that many streams in flight), 2 with more rows (4 rows x 2
// weight rows of s32 accumulators, the unpacked nibbles and the constants fill the 16 registers).
template <int R>
constexpr int kCols = R == 1 ? 4 : 2;

void tile(const Int4Int8Tile& t) {
  run_tile(t, 4 * 2, kPfAhead * kCols<1>, [&](int64_t r, auto n, bool few, int32_t* dots) {
    constexpr int R = decltype(n)::value, C = kCols<R>;
    int64_t c = 0;
    for (; c + C <= t.cols; c += C) micro<R, C>(t, r, c, few, dots);
    for (; c < t.cols; ++c) micro<R, 1>(t, r, c, few, dots);
  });
}

}  // namespace
const Int4Int8Kernels kKernels{kChunk, prepare_split<kChunk>, tile};
}  // namespace opchain::cpu::avx2i4i8
OPCHAIN_TARGET_END()

// The same on zmm with AVX512_VNNI: a chunk of 128 channels is 64 code bytes, the activation codes laid out
// as the even channels' 64 then the odd ones' 64, and vpdpbusd sums four u8 x s8 products into each s32 lane
// (no saturation, no widening step). A group's 16 lanes are folded to 8 (integers: exact) and combined as
// the AVX2 tile combines them.
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
namespace opchain::cpu::avx512i4i8 {
namespace {

constexpr int64_t kChunk = 128;
constexpr int64_t kPfAhead = 4;

inline void dpbusd(__m512i& acc, __m512i u8, __m512i s8) { acc = _mm512_dpbusd_epi32(acc, u8, s8); }

template <int R, int C>
void micro(const Int4Int8Tile& t, int64_t r0, int64_t c0, bool few, int32_t* dots) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  const int64_t per_group = t.group_size / kChunk, chunks = t.k / kChunk;
  const bool prefetch = few && c0 + (kPfAhead + 1) * C <= t.cols;
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  const int8_t* x[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  for (int64_t g = 0; g < t.groups; ++g) {
    __m512i acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
    for (int64_t chunk = g * per_group; chunk < std::min((g + 1) * per_group, chunks); ++chunk) {
      if (prefetch)  // a line of each of the C rows per chunk
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk * C * 64 + c * 64, 0, 2);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const __m512i v = _mm512_loadu_si512(t.codes + (c0 + c) * t.code_ld + chunk * (kChunk / 2));
        const __m512i even = _mm512_and_si512(v, low), odd = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const int8_t* xc = x[r] + chunk * kChunk;
          dpbusd(acc[r][c], even, _mm512_loadu_si512(xc));
          dpbusd(acc[r][c], odd, _mm512_loadu_si512(xc + 64));
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c)
        _mm256_store_si256(
            reinterpret_cast<__m256i*>(dots + ((r * C + c) * t.groups + g) * 8),
            _mm256_add_epi32(_mm512_castsi512_si256(acc[r][c]), _mm512_extracti64x4_epi64(acc[r][c], 1)));
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      t.out[(r0 + r) * t.ldo + c0 + c] = avx2i4i8::combine(t, dots + (r * C + c) * t.groups * 8, r0 + r, c0 + c);
}

// 8 weight rows for one row (streams in flight), 4 x 4 blocks for more (16 accumulators of 32 registers).
template <int R>
constexpr int kCols = R == 1 ? 8 : 4;

void tile(const Int4Int8Tile& t) {
  run_tile(t, 4 * 4, kPfAhead * kCols<1>, [&](int64_t r, auto n, bool few, int32_t* dots) {
    constexpr int R = decltype(n)::value, C = kCols<R>;
    int64_t c = 0;
    for (; c + C <= t.cols; c += C) micro<R, C>(t, r, c, few, dots);
    for (; c < t.cols; ++c) micro<R, 1>(t, r, c, few, dots);
  });
}

}  // namespace
const Int4Int8Kernels kKernels{kChunk, prepare_split<kChunk>, tile, &avx2i4i8::kKernels};
}  // namespace opchain::cpu::avx512i4i8
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86

namespace opchain::cpu {

const Int4Int8Kernels* int4_int8_kernels() {
#if OPCHAIN_CPU_X86
  static const bool vnni = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni");
  }();
  const Isa isa = active_isa();
  if (vnni && (isa == Isa::Avx512 || isa == Isa::Avx512Bf16 || isa == Isa::Amx)) return &avx512i4i8::kKernels;
  if (isa != Isa::Generic) return &avx2i4i8::kKernels;
#endif
  return nullptr;
}

}  // namespace opchain::cpu
