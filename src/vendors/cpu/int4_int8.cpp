// The Int8 precision's int4 tile (quant_simd.h, Int4Int8Tile; Note [Matmul precision]) on AVX2: a chunk
// of 64 channels is 32 code bytes, whose low nibbles (the even channels) and high nibbles (the odd ones)
// become u8 lanes by an and and a shift; vpmaddubsw multiplies them with the activation codes (s8, laid out
// as the even channels' 32 then the odd channels' 32) and sums pairs into s16 (no saturation: see micro);
// vpmaddwd widens to s32. Every group's dot is exact, so the tile shape, the lane each product lands in and
// the order of the integer sums change nothing. After each group the micro-tile folds its accumulators
// into one lane per output and combines the lanes in vectors with the reference's f32 operations, so each
// output sums its groups in the reference's order and the result is its bits.
#include <algorithm>
#include <array>
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

// The per-group numbers a micro-tile's combine reads, group-major so that one group's values for the
// tile's rows (or weight rows) sit side by side and load as one vector: the row block's activation scales
// and code sums (as f32: exact, |sum| <= 127 * group_size), [groups][4], filled once per row block by
// run_tile; a micro-tile's weight scales and zero points, [groups][C], filled by the micro-tile. Each array
// has a vector's padding past its end (zeros), since a group's load reads 8 floats.
struct GroupMajor {
  float* xs = nullptr;
  float* xsum = nullptr;
  float* ws = nullptr;
  float* zs = nullptr;  // null where the weight has no zero points (8)
};

// A tile: the few-row tiles (decode, each weight row read once) prefetch their first `pf_cols` weight
// rows, then pass(r, n, few, gm) runs each block of rows (for_blocks_of_four) over every column, with the
// block's activation numbers in `gm` and room there for micro-tiles of up to `max_cols` weight rows.
template <class Pass>
void run_tile(const Int4Int8Tile& t, int64_t max_cols, int64_t pf_cols, const Pass& pass) {
  thread_local std::vector<float> buf;
  constexpr int64_t kPad = 16;
  const int64_t row_part = t.groups * 4 + kPad, col_part = t.groups * max_cols + kPad;
  float* p = scratch_aligned(buf, static_cast<size_t>(2 * row_part + 2 * col_part));
  std::fill(p, p + 2 * row_part + 2 * col_part, 0.0f);
  GroupMajor gm{p, p + row_part, p + 2 * row_part, t.zeros ? p + 2 * row_part + col_part : nullptr};
  const bool few = t.rows <= 4;
  if (few)
    for (int64_t b = 0; b < std::min(t.cols, pf_cols) * t.code_ld; b += 64) __builtin_prefetch(t.codes + b, 0, 2);
  for_blocks_of_four(t.rows, [&](int64_t r, auto n) {
    for (int64_t g = 0; g < t.groups; ++g)
      for (int i = 0; i < decltype(n)::value; ++i) {
        gm.xs[g * 4 + i] = t.x_scales[(r + i) * t.groups + g];
        gm.xsum[g * 4 + i] = static_cast<float>(t.x_sums[(r + i) * t.groups + g]);
      }
    pass(r, n, few, gm);
  });
}

// Which output each lane of a micro-tile's folded group dots holds: row `row[i]` and weight row `col[i]`
// of the micro-tile where `used[i]`; other lanes compute on row 0's and weight row 0's numbers, unread.
struct LaneMap {
  std::array<int32_t, 16> row{}, col{};
  std::array<bool, 16> used{};
};

// The micro-tiles take their weight rows in pairs: vector r * P + p holds row r's dots with weight rows 2p
// (its low half) and 2p + 1 (its high half; weight row C - 1 again where C is odd), so one fold gives two
// outputs per vector. The folds (fold_pairs) put vector 4 * (i / 8) + i % 4's half (i / 4) % 2 in lane i.
template <int R, int C>
struct PairedLanes {
  static constexpr int kWeightRows = C;
  static constexpr LaneMap map = [] {
    constexpr int P = (C + 1) / 2;
    LaneMap m;
    for (int i = 0; i < 16; ++i) {
      const int v = 4 * (i / 8) + i % 4, col = 2 * (v % P) + (i / 4) % 2;
      if (v < R * P && col < C) {
        m.row[static_cast<size_t>(i)] = v / P;
        m.col[static_cast<size_t>(i)] = col;
        m.used[static_cast<size_t>(i)] = true;
      }
    }
    return m;
  }();
};

// Writes a micro-tile's outputs from its lanes.
template <class Lanes>
void store_lanes(const Int4Int8Tile& t, int64_t r0, int64_t c0, const float* lanes) {
  for (size_t i = 0; i < 16; ++i)
    if (Lanes::map.used[i]) t.out[(r0 + Lanes::map.row[i]) * t.ldo + c0 + Lanes::map.col[i]] = lanes[i];
}

}  // namespace
}  // namespace opchain::cpu

OPCHAIN_TARGET_BEGIN("avx2,fma,f16c")
namespace opchain::cpu::avx2i4i8 {
namespace {

constexpr int64_t kChunk = 64;
// Few-row tiles read each weight row once from memory: they prefetch the rows this many micro-tiles on.
constexpr int64_t kPfAhead = 4;

// dst[g * C + c] = src[c * n + g] for C rows of n floats: eight groups at a time as 4 x 8 transposes.
template <int C>
inline void transpose_groups(const float* src, int64_t n, float* dst) {
  int64_t g = 0;
  if constexpr (C == 2) {
    for (; g + 8 <= n; g += 8) {
      const __m256 a = _mm256_loadu_ps(src + g), b = _mm256_loadu_ps(src + n + g);
      const __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);  // groups 0 1 4 5, 2 3 6 7
      _mm256_storeu_ps(dst + g * 2, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(dst + g * 2 + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  } else if constexpr (C == 4 || C == 8) {
    for (; g + 8 <= n; g += 8) {
      __m256 u[C / 4][4];  // u[h][j]: group j's then group j + 4's four weight rows 4h..4h+3
#pragma GCC unroll 2
      for (int h = 0; h < C / 4; ++h) {
        const float* s0 = src + 4 * h * n + g;
        const __m256 a = _mm256_loadu_ps(s0), b = _mm256_loadu_ps(s0 + n);
        const __m256 c = _mm256_loadu_ps(s0 + 2 * n), d = _mm256_loadu_ps(s0 + 3 * n);
        const __m256 ab0 = _mm256_unpacklo_ps(a, b), ab1 = _mm256_unpackhi_ps(a, b);
        const __m256 cd0 = _mm256_unpacklo_ps(c, d), cd1 = _mm256_unpackhi_ps(c, d);
        u[h][0] = _mm256_shuffle_ps(ab0, cd0, 0x44);
        u[h][1] = _mm256_shuffle_ps(ab0, cd0, 0xee);
        u[h][2] = _mm256_shuffle_ps(ab1, cd1, 0x44);
        u[h][3] = _mm256_shuffle_ps(ab1, cd1, 0xee);
      }
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        if constexpr (C == 4) {
          if (j % 2 == 0) {
            _mm256_storeu_ps(dst + (g + j) * 4, _mm256_permute2f128_ps(u[0][j], u[0][j + 1], 0x20));
            _mm256_storeu_ps(dst + (g + j + 4) * 4, _mm256_permute2f128_ps(u[0][j], u[0][j + 1], 0x31));
          }
        } else {
          _mm256_storeu_ps(dst + (g + j) * 8, _mm256_permute2f128_ps(u[0][j], u[1][j], 0x20));
          _mm256_storeu_ps(dst + (g + j + 4) * 8, _mm256_permute2f128_ps(u[0][j], u[1][j], 0x31));
        }
    }
  }
  for (; g < n; ++g)
    for (int c = 0; c < C; ++c) dst[g * C + c] = src[c * n + g];
}

// Fills `gm`'s weight half for weight rows c0..c0+C-1.
template <int C>
inline void fill_weight_groups(const Int4Int8Tile& t, int64_t c0, const GroupMajor& gm) {
  transpose_groups<C>(t.scales + c0 * t.groups, t.groups, gm.ws);
  if (gm.zs) transpose_groups<C>(t.zeros + c0 * t.groups, t.groups, gm.zs);
}

// Each half's lane sum of N <= 4 vectors (integers: exact in any order), as PairedLanes places them.
template <int N>
inline __m256i fold_pairs(const __m256i (&v)[4]) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i s01 = _mm256_hadd_epi32(v[0], N > 1 ? v[1] : zero);
  const __m256i s23 = N > 2 ? _mm256_hadd_epi32(v[2], N > 3 ? v[3] : zero) : zero;
  return _mm256_hadd_epi32(s01, s23);
}

// One group's step of the combine for up to 8 lanes (a LaneMap): the reference's f32
// operations on each lane's dot, the term added to the lane's sum, so each output sums its groups in order.
template <class Lanes>
inline void combine8(__m256i dots, const GroupMajor& gm, int64_t g, __m256& sum) {
  constexpr int64_t C = Lanes::kWeightRows;
  const __m256i rows = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(Lanes::map.row.data()));
  const __m256i cols = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(Lanes::map.col.data()));
  const __m256 xs = _mm256_permutevar8x32_ps(_mm256_loadu_ps(gm.xs + g * 4), rows);
  const __m256 x_sum = _mm256_permutevar8x32_ps(_mm256_loadu_ps(gm.xsum + g * 4), rows);
  const __m256 ws = _mm256_permutevar8x32_ps(_mm256_loadu_ps(gm.ws + g * C), cols);
  const __m256 z = gm.zs ? _mm256_permutevar8x32_ps(_mm256_loadu_ps(gm.zs + g * C), cols) : _mm256_set1_ps(8.0f);
  // Each product is rounded before its sum, as the reference's separate multiplies round them: the asm
  // keeps GCC from fusing the two into an FMA.
  __m256 zx = _mm256_mul_ps(z, x_sum);
  asm("" : "+x"(zx));
  const __m256 d = _mm256_sub_ps(_mm256_cvtepi32_ps(dots), zx);
  __m256 term = _mm256_mul_ps(d, _mm256_mul_ps(xs, ws));
  asm("" : "+x"(term));
  sum = _mm256_add_ps(sum, term);
}

// R rows x C weight rows: each group's dots into s32 lane vectors, folded into one lane per output and
// combined before the next group. Each 32-code-byte chunk is taken in two halves, each half of a pair of
// weight rows in one ymm against the activation codes' matching 16 bytes in both halves (PairedLanes), and
// its nibbles unpacked once for all R rows.
template <int R, int C>
void micro(const Int4Int8Tile& t, int64_t r0, int64_t c0, bool few, const GroupMajor& gm) {
  constexpr int P = (C + 1) / 2;
  static_assert(R * P <= 4);
  using Lanes = PairedLanes<R, C>;
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const int64_t per_group = t.group_size / kChunk, chunks = t.k / kChunk;
  const bool prefetch = few && c0 + (kPfAhead + 1) * C <= t.cols;
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  fill_weight_groups<C>(t, c0, gm);
  const uint8_t* w[2 * P];
#pragma GCC unroll 8
  for (int j = 0; j < 2 * P; ++j) w[j] = t.codes + (c0 + std::min(j, C - 1)) * t.code_ld;
  const int8_t* x[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  __m256 sum = _mm256_setzero_ps();
  for (int64_t g = 0; g < t.groups; ++g) {
    __m256i acc[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) acc[i] = _mm256_setzero_si256();
    for (int64_t chunk = g * per_group; chunk < std::min((g + 1) * per_group, chunks); ++chunk) {
      if (prefetch && chunk % 2 == 0)  // a line of each of the C rows every two chunks
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk / 2 * C * 64 + c * 64, 0, 2);
      const int64_t at = chunk * (kChunk / 2);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        __m256i even[2], odd[2];
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(w[2 * p + 1] + at + 16 * h),
                                                reinterpret_cast<const __m128i*>(w[2 * p] + at + 16 * h));
          even[h] = _mm256_and_si256(v, low);
          odd[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          // Eight products a s16 lane, both halves' (|sum| <= 8 * 15 * 127), widened once.
          const int8_t* xc = x[r] + chunk * kChunk;
          __m256i pairs[2];
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            const __m256i xe =
                _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xc + 16 * h)));
            const __m256i xo =
                _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xc + 32 + 16 * h)));
            pairs[h] = _mm256_add_epi16(_mm256_maddubs_epi16(even[h], xe), _mm256_maddubs_epi16(odd[h], xo));
          }
          acc[r * P + p] =
              _mm256_add_epi32(acc[r * P + p], _mm256_madd_epi16(_mm256_add_epi16(pairs[0], pairs[1]), ones));
        }
      }
    }
    combine8<Lanes>(fold_pairs<R * P>(acc), gm, g, sum);
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, sum);
  store_lanes<Lanes>(t, r0, c0, lanes);
}

// Weight rows per micro-tile: 8 for one row (that many streams in flight), 2 with more rows (the
// activation codes of 4 rows, the accumulators, the unpacked nibbles and the constants fill the 16
// registers).
template <int R>
constexpr int kCols = R == 1 ? 8 : 2;

void tile(const Int4Int8Tile& t) {
  run_tile(t, kCols<1>, kPfAhead * kCols<1>, [&](int64_t r, auto n, bool few, const GroupMajor& gm) {
    constexpr int R = decltype(n)::value, C = kCols<R>;
    int64_t c = 0;
    for (; c + C <= t.cols; c += C) micro<R, C>(t, r, c, few, gm);
    for (; c < t.cols; ++c) micro<R, 1>(t, r, c, few, gm);
  });
}

}  // namespace
const Int4Int8Kernels kKernels{kChunk, prepare_split<kChunk>, tile};
}  // namespace opchain::cpu::avx2i4i8
OPCHAIN_TARGET_END()

// The same on zmm with AVX512_VNNI: a chunk of 128 channels is 64 code bytes, the activation codes laid out
// as the even channels' 64 then the odd ones' 64, and vpdpbusd sums four u8 x s8 products into each s32 lane
// (no saturation, no widening step). Micro-tiles fold and combine as the AVX2 ones do, 16 lanes at a time
// where they have more than 8 outputs.
OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
namespace opchain::cpu::avx512i4i8 {
namespace {

constexpr int64_t kChunk = 128;
constexpr int64_t kPfAhead = 4;

inline void dpbusd(__m512i& acc, __m512i u8, __m512i s8) { acc = _mm512_dpbusd_epi32(acc, u8, s8); }

// Each half's lane sum of N <= 8 vectors (integers: exact in any order), as PairedLanes places them:
// neighbours' dwords, then qwords, summed within each 128-bit block (a block then holds four vectors'
// block sums), then a half's two blocks.
template <int N>
inline __m512i fold_pairs(const __m512i (&v)[8]) {
  __m512i s[4], q[2];
#pragma GCC unroll 4
  for (int i = 0; i < (N + 1) / 2; ++i)
    s[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 2
  for (int i = 0; i < (N + 3) / 4; ++i) {
    const __m512i b = 4 * i + 2 < N ? s[2 * i + 1] : _mm512_setzero_si512();
    q[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(s[2 * i], b), _mm512_unpackhi_epi64(s[2 * i], b));
  }
  if constexpr (N <= 4) {  // lanes 0-7: q[0]'s blocks 0 + 1, then 2 + 3
    const __m512i t = _mm512_add_epi32(q[0], _mm512_shuffle_i32x4(q[0], q[0], 0xb1));
    return _mm512_shuffle_i32x4(t, t, 0x08);
  } else {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(q[0], q[1], 0x88), _mm512_shuffle_i32x4(q[0], q[1], 0xdd));
  }
}

// combine8 for 16 lanes.
template <class Lanes>
inline void combine16(__m512i dots, const GroupMajor& gm, int64_t g, __m512& sum) {
  constexpr int64_t C = Lanes::kWeightRows;
  const __m512i rows = _mm512_loadu_si512(Lanes::map.row.data()), cols = _mm512_loadu_si512(Lanes::map.col.data());
  const __m512 xs = _mm512_permutexvar_ps(rows, _mm512_castps256_ps512(_mm256_loadu_ps(gm.xs + g * 4)));
  const __m512 x_sum = _mm512_permutexvar_ps(rows, _mm512_castps256_ps512(_mm256_loadu_ps(gm.xsum + g * 4)));
  const __m512 ws = _mm512_permutexvar_ps(cols, _mm512_castps256_ps512(_mm256_loadu_ps(gm.ws + g * C)));
  const __m512 z = gm.zs ? _mm512_permutexvar_ps(cols, _mm512_castps256_ps512(_mm256_loadu_ps(gm.zs + g * C)))
                         : _mm512_set1_ps(8.0f);
  __m512 zx = _mm512_mul_ps(z, x_sum);
  asm("" : "+v"(zx));
  const __m512 d = _mm512_sub_ps(_mm512_cvtepi32_ps(dots), zx);
  __m512 term = _mm512_mul_ps(d, _mm512_mul_ps(xs, ws));
  asm("" : "+v"(term));
  sum = _mm512_add_ps(sum, term);
}

// R rows x C weight rows, the weight rows in pairs (PairedLanes): each 64-code-byte chunk is taken in two
// halves, each half of two weight rows in one zmm against the activation codes' matching 32 bytes in both
// halves, so every vpdpbusd still does 64 products and a group folds R * P vectors instead of R * C.
template <int R, int C>
void micro(const Int4Int8Tile& t, int64_t r0, int64_t c0, bool few, const GroupMajor& gm) {
  constexpr int P = (C + 1) / 2, N = R * P;
  static_assert(N <= 8);
  using Lanes = PairedLanes<R, C>;
  const __m512i low = _mm512_set1_epi8(0x0f);
  const int64_t per_group = t.group_size / kChunk, chunks = t.k / kChunk;
  const bool prefetch = few && c0 + (kPfAhead + 1) * C <= t.cols;
  const uint8_t* pf = t.codes + (c0 + kPfAhead * C) * t.code_ld;
  avx2i4i8::fill_weight_groups<C>(t, c0, gm);
  const uint8_t* w[2 * P];
#pragma GCC unroll 8
  for (int j = 0; j < 2 * P; ++j) w[j] = t.codes + (c0 + std::min(j, C - 1)) * t.code_ld;
  const int8_t* x[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) x[r] = t.x + (r0 + r) * t.ldx;
  __m512 wide_sum = _mm512_setzero_ps();
  __m256 sum = _mm256_setzero_ps();
  for (int64_t g = 0; g < t.groups; ++g) {
    __m512i acc[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) acc[i] = _mm512_setzero_si512();
    for (int64_t chunk = g * per_group; chunk < std::min((g + 1) * per_group, chunks); ++chunk) {
      if (prefetch)  // a line of each of the C rows per chunk
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + chunk * C * 64 + c * 64, 0, 2);
      const int64_t at = chunk * (kChunk / 2);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i even[P], odd[P];
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const __m512i v = _mm512_inserti64x4(
              _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[2 * p] + at + 32 * h))),
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[2 * p + 1] + at + 32 * h)), 1);
          even[p] = _mm512_and_si512(v, low);
          odd[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const int8_t* xc = x[r] + chunk * kChunk + 32 * h;
          const __m512i xe = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc)));
          const __m512i xo = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc + 64)));
#pragma GCC unroll 4
          for (int p = 0; p < P; ++p) {
            dpbusd(acc[r * P + p], even[p], xe);
            dpbusd(acc[r * P + p], odd[p], xo);
          }
        }
      }
    }
    const __m512i dots = fold_pairs<N>(acc);
    if constexpr (N <= 4)
      avx2i4i8::combine8<Lanes>(_mm512_castsi512_si256(dots), gm, g, sum);
    else
      combine16<Lanes>(dots, gm, g, wide_sum);
  }
  alignas(64) float lanes[16];
  if constexpr (N <= 4)
    _mm256_store_ps(lanes, sum);
  else
    _mm512_store_ps(lanes, wide_sum);
  store_lanes<Lanes>(t, r0, c0, lanes);
}

// 8 weight rows for one row (streams in flight), 4 x 4 blocks for more (8 accumulators, the unpacked nibbles
// of two halves and the activation codes in registers).
template <int R>
constexpr int kCols = R == 1 ? 8 : 4;

void tile(const Int4Int8Tile& t) {
  run_tile(t, kCols<1>, kPfAhead * kCols<1>, [&](int64_t r, auto n, bool few, const GroupMajor& gm) {
    constexpr int R = decltype(n)::value, C = kCols<R>;
    int64_t c = 0;
    for (; c + C <= t.cols; c += C) micro<R, C>(t, r, c, few, gm);
    for (; c < t.cols; ++c) micro<R, 1>(t, r, c, few, gm);
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
