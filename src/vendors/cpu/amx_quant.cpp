// Isa::Amx's int8 and fp8 tiles (quant_simd.h; Note [AMX tier], amx.h).
//
// int8: TDPBSSD multiplies a 16 x 64-byte tile of weight codes (A: 16 weight rows' codes for 64
// channels, loaded in place, stride the weight's row stride) with the same 64 channels of 16 activation rows in AMX's
// VNNI layout (B: row kk holds, for each activation row m, its codes 4kk..4kk+3; built once per call by amx_int8_pack),
// adding exact int32 dots into a 16 x 16 C tile [weight row][activation row]. TDPBSSD (signed x signed) rather than
// TDPBUSD (unsigned A): the weight codes then need no w + 128 flip, which would mean copying every weight tile first;
// both run at the same rate (the peak probe in tests/vendors/cpu_quant_perf_test.cpp times both). The C tiles hold
// sum_k x w exactly, the avx512q tile's sum_k x (w + 128) - 128 sum_k x, so the float ops after it (the same ones, in
// the same order) give the same bits.
//
// fp8 (Fp8Group activations on Fp8Block / Fp8Channel weights): TDPBF16PS on the codes' exact bf16 values.
// A: 16 weight rows x 32 channels unpacked from the codes (fp8_unpack.inc), staged a chunk ahead in a
// double buffer (few activation rows) or from a panel of 32 weight rows unpacked once for all row blocks
// (more than 32); B: 16 activation rows in AMX's pair layout, packed once per call (amx_pack_pairs) in the
// same channel order. For each scale group, C tiles start at zero and take the group's k steps in order;
// then acc = fma(C, x_scale * w_scale, acc), groups in order. An output element so depends only on its
// activation row, its weight row and k, and the Amx tier runs this tile for every row count (its bits
// differ from the avx512fp8 tile's: another summation order).
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/quant_simd.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx2,fma")
namespace opchain::cpu {
namespace {

constexpr int64_t kBlock = 64;  // channels per tile step: 64 bytes per tile row

// Tile registers: C 0..3 (2 weight groups x 2 activation groups), A (weights) 4..5, B (activations)
// 6..7, under amx_full_tiles().

// The 16 x 16 int32 matrix r[0..15] transposed in place: four rounds, each swapping the off-diagonal
// blocks of size b (bit b of the row index with bit b of the lane index) with two-source permutes.
struct TransposeIdx {
  alignas(64) int32_t lo[4][16], hi[4][16];
  constexpr TransposeIdx() : lo{}, hi{} {
    for (int s = 0; s < 4; ++s)
      for (int j = 0, b = 8 >> s; j < 16; ++j) {
        lo[s][j] = (j & b) ? 16 + j - b : j;
        hi[s][j] = (j & b) ? 16 + j : j + b;
      }
  }
};
constexpr TransposeIdx kTransposeIdx;

inline void transpose16(__m512i r[16]) {
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) {
    const int b = 8 >> s;
    const __m512i ilo = _mm512_load_si512(kTransposeIdx.lo[s]), ihi = _mm512_load_si512(kTransposeIdx.hi[s]);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if (i & b) continue;
      const __m512i a = r[i], c = r[i + b];
      r[i] = _mm512_permutex2var_epi32(a, ilo, c);
      r[i + b] = _mm512_permutex2var_epi32(a, ihi, c);
    }
  }
}

inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// Weight rows [c, c + n) (n <= 16), channels [i, i + 64), as a tile load's source: in place when the
// block is whole; else (the last weight rows, the k tail) copied into `stage` with zeros past the n rows
// and past k, so no load reads past the weight (the activations are zero past k: Int8Tile::x).
inline const int8_t* weight_block(const Int8Tile& t, int64_t c, int64_t n, int64_t i, int8_t* stage, int64_t& stride) {
  const int64_t len = std::min(kBlock, t.k - i);
  if (n == 16 && len == kBlock) {
    stride = t.ldw;
    return t.w + c * t.ldw + i;
  }
  std::memset(stage, 0, 16 * kBlock);
  for (int64_t r = 0; r < n; ++r) std::memcpy(stage + r * kBlock, t.w + (c + r) * t.ldw + i, static_cast<size_t>(len));
  stride = kBlock;
  return stage;
}

// out[r0 + m, c0 + n] for m < na, n < nw from a C tile [n][m]: the avx512q tile's combine, 16 columns
// at a time (total = sum - zero * x_sum in int64, float(total) * x_scale * w_scale).
void combine(const Int8Tile& t, const int32_t* cbuf, int64_t c0, int64_t nw, int64_t r0, int64_t na) {
  __m512i v[16];
  for (int n = 0; n < 16; ++n) v[n] = _mm512_load_si512(cbuf + 16 * n);
  transpose16(v);  // v[m]: activation row m's sums over the 16 weight rows
  const __mmask16 m16 = lanes(nw);
  const __m512 ws = _mm512_maskz_loadu_ps(m16, t.w_scales + c0);
  __m512i z_lo = _mm512_setzero_si512(), z_hi = _mm512_setzero_si512();
  if (t.w_zeros) {
    const __m512 z = _mm512_maskz_loadu_ps(m16, t.w_zeros + c0);
    z_lo = _mm512_cvttps_epi64(_mm512_castps512_ps256(z));  // truncation, as static_cast<int64_t>
    z_hi = _mm512_cvttps_epi64(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z), 1)));
  }
  for (int64_t m = 0; m < na; ++m) {
    const int64_t r = r0 + m;
    __m512 f;
    if (t.w_zeros) {
      const __m512i xs = _mm512_set1_epi64(t.x_sums[r]);
      const __m512i lo =
          _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(v[m])), _mm512_mullo_epi64(z_lo, xs));
      const __m512i hi =
          _mm512_sub_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v[m], 1)), _mm512_mullo_epi64(z_hi, xs));
      f = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtepi64_ps(lo)), _mm512_cvtepi64_ps(hi), 1);
    } else {
      f = _mm512_cvtepi32_ps(v[m]);  // the same rounding as float(int64) of the same integer
    }
    _mm512_mask_storeu_ps(t.out + r * t.ldo + c0, m16,
                          _mm512_mul_ps(_mm512_mul_ps(f, _mm512_set1_ps(t.x_scales[r])), ws));
  }
}

// WG groups of 16 weight rows from c0 (nw rows in all) x AG groups of 16 activation rows from r0 (na).
template <int WG, int AG>
void block(const Int8Tile& t, int64_t c0, int64_t nw, int64_t r0, int64_t na) {
  alignas(64) int8_t stage[2][16 * kBlock];
  const int64_t xblock = kInt8PackRows * t.ldx;  // bytes of one packed 16-row block
  const int8_t* xb = t.xp + r0 / kInt8PackRows * xblock;
  const int64_t n0 = std::min<int64_t>(nw, 16), n1 = nw - n0;
  _tile_zero(0);
  if constexpr (AG > 1) _tile_zero(1);
  if constexpr (WG > 1) _tile_zero(2);
  if constexpr (WG > 1 && AG > 1) _tile_zero(3);
  // Few activation rows stream the weights from memory once: prefetch the rows' next blocks ahead of
  // the tile loads (16 rows at a time defeat the hardware's stream detection when rows are long).
  constexpr int64_t kAhead = 4 * kBlock;
  for (int64_t i = 0; i < t.k; i += kBlock) {
    if (i + kAhead < t.k)
      for (int64_t r = 0; r < nw; ++r) __builtin_prefetch(t.w + (c0 + r) * t.ldw + i + kAhead, 0, 1);
    int64_t s0 = 0, s1 = 0;
    const int8_t* a0 = weight_block(t, c0, n0, i, stage[0], s0);
    _tile_loadd(4, a0, s0);
    _tile_loadd(6, xb + i / kBlock * 1024, 64);
    if constexpr (AG > 1) _tile_loadd(7, xb + xblock + i / kBlock * 1024, 64);
    _tile_dpbssd(0, 4, 6);
    if constexpr (AG > 1) _tile_dpbssd(1, 4, 7);
    if constexpr (WG > 1) {
      const int8_t* a1 = weight_block(t, c0 + 16, n1, i, stage[1], s1);
      _tile_loadd(5, a1, s1);
      _tile_dpbssd(2, 5, 6);
      if constexpr (AG > 1) _tile_dpbssd(3, 5, 7);
    }
  }
  alignas(64) int32_t cbuf[16 * 16];
  const int64_t a0n = std::min<int64_t>(na, 16);
  _tile_stored(0, cbuf, 64);
  combine(t, cbuf, c0, n0, r0, a0n);
  if constexpr (AG > 1) {
    _tile_stored(1, cbuf, 64);
    combine(t, cbuf, c0, n0, r0 + 16, na - 16);
  }
  if constexpr (WG > 1) {
    _tile_stored(2, cbuf, 64);
    combine(t, cbuf, c0 + 16, n1, r0, a0n);
  }
  if constexpr (WG > 1 && AG > 1) {
    _tile_stored(3, cbuf, 64);
    combine(t, cbuf, c0 + 16, n1, r0 + 16, na - 16);
  }
}

// ---- fp8 ----------------------------------------------------------------------------------------------

#include "vendors/cpu/fp8_unpack.inc"

constexpr int64_t kStep = 32;  // bf16 channels per tile row: one TDPBF16PS k step
constexpr int64_t kBlockRows = 16;
constexpr int64_t kFp8Ahead = 4;  // chunks of each weight row prefetched ahead of its staging

// Weight rows [c, c + n) (n <= 16), chunk `chunk`, unpacked into two A tiles (the chunk's 32-wide
// halves, in the tile channel order); rows past n are zero. The rows' chunks kFp8Ahead on are
// prefetched: 16 or 32 row streams read a chunk at a time defeat the hardware's stream detection.
inline void stage_weights(const Fp8Tile& t, const Tables& tb, int64_t c, int64_t n, int64_t chunk, uint16_t* a0,
                          uint16_t* a1) {
  const bool ahead = (chunk + kFp8Ahead) * kFp8Chunk < t.k;
  for (int64_t r = 0; r < kBlockRows; ++r) {
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    if (r < n) {
      const uint8_t* row = t.codes + (c + r) * t.code_ld;
      if (ahead) __builtin_prefetch(row + (chunk + kFp8Ahead) * kFp8Chunk, 0, 1);
      unpack(tb, _mm512_loadu_si512(row + chunk * kFp8Chunk), lo, hi);
    }
    _mm512_store_si512(a0 + r * kStep, lo);
    _mm512_store_si512(a1 + r * kStep, hi);
  }
}

// Many activation rows: a 32-row weight block is unpacked once into a panel that every row block reads
// (the staging above would repeat it per row block). uint16 from one panel row to the next: a line more
// than k, so that an A tile's 16 rows do not all fall in one L1 set (k * 2 bytes apart, 4 KiB at k 2048).
inline int64_t panel_ld(const Fp8Tile& t) { return t.k + 32; }

// Weight rows [c, c + n) (n <= 32) into `panel`, one row after another (one stream from memory, which
// the hardware prefetcher follows); rows past n zero.
void unpack_block(const Fp8Tile& t, int64_t c, int64_t n, uint16_t* panel) {
  const Tables& tb = tables();
  for (int64_t r = 0; r < 32; ++r) {
    uint16_t* row = panel + r * panel_ld(t);
    if (r >= n) {
      std::memset(row, 0, static_cast<size_t>(t.k) * sizeof(uint16_t));
      continue;
    }
    const uint8_t* codes = t.codes + (c + r) * t.code_ld;
    for (int64_t i = 0; i < t.k; i += kFp8Chunk) {
      __m512i a, b;
      unpack(tb, _mm512_loadu_si512(codes + i), a, b);
      _mm512_store_si512(row + i, a);
      _mm512_store_si512(row + i + 32, b);
    }
  }
}

// acc[n][m] = fma(C[n][m], x_scale(m) * w_scale(n), acc[n][m]) for the C tile in cbuf.
inline void fold_group(const float* cbuf, const float* sx, const float* sw, int64_t nw, float* acc) {
  const __m512 vx = _mm512_load_ps(sx);
  for (int64_t n = 0; n < nw; ++n) {
    const __m512 s = _mm512_mul_ps(vx, _mm512_set1_ps(sw[n]));
    _mm512_store_ps(acc + 16 * n, _mm512_fmadd_ps(_mm512_load_ps(cbuf + 16 * n), s, _mm512_load_ps(acc + 16 * n)));
  }
}

// WG groups of 16 weight rows from c0 (nw rows in all) x AG groups of 16 activation rows from r0 (na).
// The weights come from `panel` (unpack_block) or, where it is null, are staged a chunk ahead into the
// other half of a double buffer right after the tile multiplies of the current chunk are issued, so the
// unpacking overlaps them. Either way every output element sees the same operations.
template <int WG, int AG>
void fp8_block(const Fp8Tile& t, const uint16_t* panel, int64_t c0, int64_t nw, int64_t r0, int64_t na) {
  const Tables& tb = tables();
  alignas(64) uint16_t stage[2][2][2][kBlockRows * kStep];  // [buffer][weight group][chunk half]
  alignas(64) float acc[2][2][16 * 16] = {};                // [weight group][activation group]: [n][m]
  alignas(64) float cbuf[16 * 16], sx[2][16], sw[2][16];
  const int64_t xblock = kBlockRows * t.k;  // uint16 of one packed 16-row block
  const uint16_t* xb = t.x + r0 / kBlockRows * xblock;
  const int64_t nwg[2] = {std::min<int64_t>(nw, 16), std::max<int64_t>(nw - 16, 0)};
  const int64_t nag[2] = {std::min<int64_t>(na, 16), std::max<int64_t>(na - 16, 0)};
  const int64_t per_group = t.group / kFp8Chunk, chunks = t.k / kFp8Chunk;
  auto stage_chunk = [&](int64_t chunk) {
    uint16_t(*b)[2][kBlockRows * kStep] = stage[chunk & 1];
    stage_weights(t, tb, c0, nwg[0], chunk, b[0][0], b[0][1]);
    if constexpr (WG > 1) stage_weights(t, tb, c0 + 16, nwg[1], chunk, b[1][0], b[1][1]);
  };
  const int64_t pld = panel_ld(t);
  if (!panel) stage_chunk(0);
  for (int64_t g = 0; g < t.groups; ++g) {
    _tile_zero(0);
    if constexpr (AG > 1) _tile_zero(1);
    if constexpr (WG > 1) _tile_zero(2);
    if constexpr (WG > 1 && AG > 1) _tile_zero(3);
    const int64_t last = std::min((g + 1) * per_group, chunks);  // the last group may be short
    for (int64_t chunk = g * per_group; chunk < last; ++chunk) {
      uint16_t(*b)[2][kBlockRows * kStep] = stage[chunk & 1];
      amx_compiler_barrier();  // the tile loads read the stores that staged this chunk
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t step = 2 * chunk + h;
        _tile_loadd(6, xb + step * kBlockRows * kStep, 64);
        if constexpr (AG > 1) _tile_loadd(7, xb + xblock + step * kBlockRows * kStep, 64);
        if (panel)
          _tile_loadd(4, panel + step * kStep, pld * 2);
        else
          _tile_loadd(4, b[0][h], 64);
        _tile_dpbf16ps(0, 4, 6);
        if constexpr (AG > 1) _tile_dpbf16ps(1, 4, 7);
        if constexpr (WG > 1) {
          if (panel)
            _tile_loadd(5, panel + 16 * pld + step * kStep, pld * 2);
          else
            _tile_loadd(5, b[1][h], 64);
          _tile_dpbf16ps(2, 5, 6);
          if constexpr (AG > 1) _tile_dpbf16ps(3, 5, 7);
        }
      }
      amx_compiler_barrier();  // and the next chunk's staging, into the other buffer, comes after them
      if (!panel && chunk + 1 < chunks) stage_chunk(chunk + 1);
    }
    for (int a = 0; a < AG; ++a)
      for (int64_t m = 0; m < 16; ++m) sx[a][m] = m < nag[a] ? t.x_scales[(r0 + 16 * a + m) * t.groups + g] : 0.0f;
    for (int w = 0; w < WG; ++w)
      for (int64_t n = 0; n < nwg[w]; ++n)
        sw[w][n] = t.w_scales[(c0 + 16 * w + n) * t.w_groups + (t.w_groups == 1 ? 0 : g)];
    _tile_stored(0, cbuf, 64);
    fold_group(cbuf, sx[0], sw[0], nwg[0], acc[0][0]);
    if constexpr (AG > 1) {
      _tile_stored(1, cbuf, 64);
      fold_group(cbuf, sx[1], sw[0], nwg[0], acc[0][1]);
    }
    if constexpr (WG > 1) {
      _tile_stored(2, cbuf, 64);
      fold_group(cbuf, sx[0], sw[1], nwg[1], acc[1][0]);
    }
    if constexpr (WG > 1 && AG > 1) {
      _tile_stored(3, cbuf, 64);
      fold_group(cbuf, sx[1], sw[1], nwg[1], acc[1][1]);
    }
  }
  for (int w = 0; w < WG; ++w)
    for (int a = 0; a < AG; ++a) {
      __m512i v[16];
      for (int n = 0; n < 16; ++n) v[n] = _mm512_load_si512(acc[w][a] + 16 * n);
      transpose16(v);  // v[m]: activation row m over the 16 weight rows
      for (int64_t m = 0; m < nag[a]; ++m)
        _mm512_mask_storeu_ps(t.out + (r0 + 16 * a + m) * t.ldo + c0 + 16 * w, lanes(nwg[w]),
                              _mm512_castsi512_ps(v[m]));
    }
}

// ---- int4 ----------------------------------------------------------------------------------------------

// The avx512q int4 tile's chunk layouts (int4_avx512_impl.inc: Narrow, Wide), which int4_prepare lays the
// activations out in: a chunk's code bytes as 16-bit lanes (Narrow widens 32 bytes, Wide reads 64 as they
// are), and vector j of the chunk = nibble j of every lane as the bf16 16 + q (exponent 4, q in the top four
// mantissa bits). So k step s of a weight row (32 bf16, one TDPBF16PS step) is vector s % kVecs of chunk
// s / kVecs, and the prepared row holds the same channels at its elements 32 s .. 32 s + 31.
struct Int4Narrow {
  static constexpr int64_t kChannels = 64, kBytes = 32, kVecs = 2;
};
struct Int4Wide {
  static constexpr int64_t kChannels = 128, kBytes = 64, kVecs = 4;
};
constexpr int64_t kInt4Ahead = 4;  // chunks of each weight row prefetched ahead of its staging
constexpr int64_t kInt4Buffers = 2;

template <class L>
inline __m512i int4_lanes(const uint8_t* bytes) {
  if constexpr (L::kVecs == 2)
    return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  else
    return _mm512_loadu_si512(bytes);
}

// Nibble j of every 16-bit lane moved to bits 6..3 by vpmultishiftqb (port 5), so that the unpacking leaves
// port 0, where TDPBF16PS issues, to the ternary logic: the low byte of each lane is the lane's bits
// 4j - 3 .. 4j + 4 (rotating within the qword: for j = 0 the top three are the qword's other bits, masked
// off), the high byte anything (masked off too).
struct Int4Shifts {
  __m512i ctl[4];
  Int4Shifts() {
    alignas(64) uint8_t b[64];
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 64; ++i) b[i] = i % 2 ? 0 : static_cast<uint8_t>((16 * ((i % 8) / 2) + 4 * j + 61) % 64);
      ctl[j] = _mm512_load_si512(b);
    }
  }
};

// The chunk's kVecs vectors of one weight row, each into out + j * vec_stride.
template <class L>
inline void int4_unpack_chunk(const Int4Shifts& sh, __m512i lanes, uint16_t* out, int64_t vec_stride) {
  const __m512i mant = _mm512_set1_epi16(0x78), exp16 = _mm512_set1_epi16(0x4180);
  for (int j = 0; j < L::kVecs; ++j)  // (a & mant) | exp16
    _mm512_store_si512(out + j * vec_stride,
                       _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(sh.ctl[j], lanes), mant, exp16, 0xEA));
}

// Weight rows codes[0 .. n) (n <= 16, `ld` bytes apart), chunk `chunk`, into the chunk's kVecs A tiles at
// a + j * 512; rows past n zero. The rows' chunks kInt4Ahead on are prefetched (as fp8's stage_weights).
template <class L>
inline void int4_stage(const Int4Shifts& sh, const uint8_t* codes, int64_t ld, int64_t n, int64_t chunk, bool ahead,
                       uint16_t* a) {
  const uint8_t* row = codes + chunk * L::kBytes;
  if (n == kBlockRows) {
#pragma GCC unroll 16
    for (int64_t r = 0; r < kBlockRows; ++r) {
      if (ahead) __builtin_prefetch(row + r * ld + kInt4Ahead * L::kBytes, 0, 1);
      int4_unpack_chunk<L>(sh, int4_lanes<L>(row + r * ld), a + r * kStep, kBlockRows * kStep);
    }
    return;
  }
  for (int64_t r = 0; r < kBlockRows; ++r) {
    if (r < n)
      int4_unpack_chunk<L>(sh, int4_lanes<L>(row + r * ld), a + r * kStep, kBlockRows * kStep);
    else
      for (int64_t j = 0; j < L::kVecs; ++j)
        _mm512_store_si512(a + j * kBlockRows * kStep + r * kStep, _mm512_setzero_si512());
  }
}

// Many activation rows: 32 weight rows unpacked once into a panel every row block reads (panel_ld apart).
template <class L>
void int4_unpack_block(const Int4Tile& t, int64_t c, int64_t n, uint16_t* panel) {
  const int64_t pld = t.k + 32, chunks = t.k / L::kChannels;
  const Int4Shifts sh;
  for (int64_t r = 0; r < 32; ++r) {
    uint16_t* row = panel + r * pld;
    if (r >= n) {
      std::memset(row, 0, static_cast<size_t>(t.k) * sizeof(uint16_t));
      continue;
    }
    const uint8_t* codes = t.codes + (c + r) * t.code_ld;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      int4_unpack_chunk<L>(sh, int4_lanes<L>(codes + chunk * L::kBytes), row + chunk * L::kChannels, kStep);
  }
}

// WG groups of 16 weight rows from c0 (nw rows in all) x AG groups of 16 activation rows from r0 (na), as
// fp8_block: weights from `panel` or staged a chunk ahead into a double buffer. Per group, C tiles from zero
// take the group's k steps in order (C = sum_k x (16 + q)); then acc = fma(C, s, acc) and acc = fnmadd(s (16 +
// zero), x_sum, acc), groups in order: one fixed sequence per output element.
template <class L, int WG, int AG>
void int4_block(const Int4Tile& t, const uint16_t* panel, int64_t c0, int64_t nw, int64_t r0, int64_t na) {
  alignas(64) uint16_t stage[kInt4Buffers][2][L::kVecs * kBlockRows * kStep];  // [buffer][weight group]: kVecs A tiles
  alignas(64) float acc[2][2][16 * 16] = {};  // [weight group][activation group]: [n][m]
  alignas(64) float cbuf[16 * 16], sx[2][16] = {}, sw[2][16] = {}, swz[2][16] = {};
  const uint16_t* x = static_cast<const uint16_t*>(t.x);
  const int64_t xblock = kBlockRows * t.k;  // uint16 of one packed 16-row block
  const uint16_t* xb = x + r0 / kBlockRows * xblock;
  const int64_t nwg[2] = {std::min<int64_t>(nw, 16), std::max<int64_t>(nw - 16, 0)};
  const int64_t nag[2] = {std::min<int64_t>(na, 16), std::max<int64_t>(na - 16, 0)};
  const int64_t per_group = t.group_size / L::kChannels, chunks = t.k / L::kChannels;
  const Int4Shifts sh;
  const uint8_t* const codes = t.codes + c0 * t.code_ld;
  const int64_t code_ld = t.code_ld;
  auto stage_chunk = [&, codes, code_ld](int64_t chunk) {
    const bool ahead = chunk + kInt4Ahead < chunks;
    int4_stage<L>(sh, codes, code_ld, nwg[0], chunk, ahead, stage[chunk % kInt4Buffers][0]);
    if constexpr (WG > 1)
      int4_stage<L>(sh, codes + 16 * code_ld, code_ld, nwg[1], chunk, ahead, stage[chunk % kInt4Buffers][1]);
  };
  const int64_t pld = t.k + 32;
  if (!panel)
    for (int64_t chunk = 0; chunk < std::min<int64_t>(kInt4Buffers - 1, chunks); ++chunk) stage_chunk(chunk);
  for (int64_t g = 0; g < t.groups; ++g) {
    _tile_zero(0);
    if constexpr (AG > 1) _tile_zero(1);
    if constexpr (WG > 1) _tile_zero(2);
    if constexpr (WG > 1 && AG > 1) _tile_zero(3);
    const int64_t last = std::min((g + 1) * per_group, chunks);  // the last group may be short
    for (int64_t chunk = g * per_group; chunk < last; ++chunk) {
      const uint16_t* b0 = stage[chunk % kInt4Buffers][0];
      const uint16_t* b1 = stage[chunk % kInt4Buffers][1];
      amx_compiler_barrier();  // the tile loads read the stores that staged this chunk
      for (int64_t j = 0; j < L::kVecs; ++j) {
        const int64_t step = chunk * L::kVecs + j;
        _tile_loadd(6, xb + step * kBlockRows * kStep, 64);
        if constexpr (AG > 1) _tile_loadd(7, xb + xblock + step * kBlockRows * kStep, 64);
        if (panel)
          _tile_loadd(4, panel + step * kStep, pld * 2);
        else
          _tile_loadd(4, b0 + j * kBlockRows * kStep, 64);
        _tile_dpbf16ps(0, 4, 6);
        if constexpr (AG > 1) _tile_dpbf16ps(1, 4, 7);
        if constexpr (WG > 1) {
          if (panel)
            _tile_loadd(5, panel + 16 * pld + step * kStep, pld * 2);
          else
            _tile_loadd(5, b1 + j * kBlockRows * kStep, 64);
          _tile_dpbf16ps(2, 5, 6);
          if constexpr (AG > 1) _tile_dpbf16ps(3, 5, 7);
        }
      }
      amx_compiler_barrier();  // and the next chunk's staging, into the other buffer, comes after them
      if (!panel && chunk + kInt4Buffers - 1 < chunks) stage_chunk(chunk + kInt4Buffers - 1);
    }
    for (int a = 0; a < AG; ++a)
      for (int64_t m = 0; m < nag[a]; ++m) sx[a][m] = t.x_sums[(r0 + 16 * a + m) * t.groups + g];
    for (int w = 0; w < WG; ++w)
      for (int64_t n = 0; n < nwg[w]; ++n) {
        const int64_t c = c0 + 16 * w + n;
        sw[w][n] = t.scales[c * t.groups + g];
        swz[w][n] = sw[w][n] * (t.zeros ? t.zeros[c * t.groups + g] + 16.0f : 24.0f);
      }
    auto fold = [&](int w, int a) {
      const __m512 vx = _mm512_load_ps(sx[a]);
      float* ac = acc[w][a];
      for (int64_t n = 0; n < nwg[w]; ++n) {
        const __m512 v =
            _mm512_fmadd_ps(_mm512_load_ps(cbuf + 16 * n), _mm512_set1_ps(sw[w][n]), _mm512_load_ps(ac + 16 * n));
        _mm512_store_ps(ac + 16 * n, _mm512_fnmadd_ps(_mm512_set1_ps(swz[w][n]), vx, v));
      }
    };
    _tile_stored(0, cbuf, 64);
    fold(0, 0);
    if constexpr (AG > 1) {
      _tile_stored(1, cbuf, 64);
      fold(0, 1);
    }
    if constexpr (WG > 1) {
      _tile_stored(2, cbuf, 64);
      fold(1, 0);
    }
    if constexpr (WG > 1 && AG > 1) {
      _tile_stored(3, cbuf, 64);
      fold(1, 1);
    }
  }
  for (int w = 0; w < WG; ++w)
    for (int a = 0; a < AG; ++a) {
      __m512i v[16];
      for (int n = 0; n < 16; ++n) v[n] = _mm512_load_si512(acc[w][a] + 16 * n);
      transpose16(v);  // v[m]: activation row m over the 16 weight rows
      for (int64_t m = 0; m < nag[a]; ++m)
        _mm512_mask_storeu_ps(t.out + (r0 + 16 * a + m) * t.ldo + c0 + 16 * w, lanes(nwg[w]),
                              _mm512_castsi512_ps(v[m]));
    }
}

template <class L>
void int4_tile_as(const Int4Tile& t) {
  thread_local std::vector<uint16_t> panel_buf;
  uint16_t* panel = t.rows > 32 ? scratch_aligned(panel_buf, static_cast<size_t>(32 * (t.k + 32))) : nullptr;
  for (int64_t c = 0; c < t.cols; c += 32) {
    const int64_t nw = std::min<int64_t>(32, t.cols - c);
    if (panel) {
      int4_unpack_block<L>(t, c, nw, panel);
      amx_compiler_barrier();  // the tile loads read the panel just written
    }
    for (int64_t r = 0; r < t.rows; r += 32) {
      const int64_t na = std::min<int64_t>(32, t.rows - r);
      if (nw > 16) {
        if (na > 16)
          int4_block<L, 2, 2>(t, panel, c, nw, r, na);
        else
          int4_block<L, 2, 1>(t, panel, c, nw, r, na);
      } else {
        if (na > 16)
          int4_block<L, 1, 2>(t, panel, c, nw, r, na);
        else
          int4_block<L, 1, 1>(t, panel, c, nw, r, na);
      }
    }
    amx_compiler_barrier();  // and the next block's unpacking comes after them
  }
}

}  // namespace

void amx_pack_pairs(const uint16_t* x, int64_t k, int64_t rows, uint16_t* out) {
  for (int64_t s = 0; s < k; s += kStep) {
    __m512i v[16];
    for (int64_t m = 0; m < 16; ++m) v[m] = m < rows ? _mm512_loadu_si512(x + m * k + s) : _mm512_setzero_si512();
    transpose16(v);  // v[kk]: each row's channels 2kk, 2kk + 1 of the step, row after row
    for (int kk = 0; kk < 16; ++kk) _mm512_storeu_si512(out + s * kBlockRows + kk * kStep, v[kk]);
  }
}

void amx_fp8_tile(const Fp8Tile& t) {
  amx_configure(amx_full_tiles());
  thread_local std::vector<uint16_t> panel_buf;
  uint16_t* panel = t.rows > 32 ? scratch_aligned(panel_buf, static_cast<size_t>(32 * panel_ld(t))) : nullptr;
  for (int64_t c = 0; c < t.cols; c += 32) {
    const int64_t nw = std::min<int64_t>(32, t.cols - c);
    if (panel) {
      unpack_block(t, c, nw, panel);
      amx_compiler_barrier();  // the tile loads read the panel just written
    }
    for (int64_t r = 0; r < t.rows; r += 32) {
      const int64_t na = std::min<int64_t>(32, t.rows - r);
      if (nw > 16) {
        if (na > 16)
          fp8_block<2, 2>(t, panel, c, nw, r, na);
        else
          fp8_block<2, 1>(t, panel, c, nw, r, na);
      } else {
        if (na > 16)
          fp8_block<1, 2>(t, panel, c, nw, r, na);
        else
          fp8_block<1, 1>(t, panel, c, nw, r, na);
      }
    }
    amx_compiler_barrier();  // and the next block's unpacking comes after them
  }
}

void amx_int4_tile(const Int4Tile& t) {
  amx_configure(amx_full_tiles());
  if (t.group_size % Int4Wide::kChannels == 0 && t.k % Int4Wide::kChannels == 0)
    int4_tile_as<Int4Wide>(t);
  else
    int4_tile_as<Int4Narrow>(t);
}

void amx_int8_pack(const int8_t* x, int64_t ldx, int64_t rows, int8_t* out) {
  for (int64_t i = 0; i < ldx; i += kBlock) {
    __m512i v[16];
    for (int64_t m = 0; m < 16; ++m) v[m] = m < rows ? _mm512_loadu_si512(x + m * ldx + i) : _mm512_setzero_si512();
    transpose16(v);  // v[kk]: each row's codes 4kk..4kk+3, row after row
    for (int kk = 0; kk < 16; ++kk) _mm512_storeu_si512(out + i / kBlock * 1024 + kk * 64, v[kk]);
  }
}

void amx_int8_tile(const Int8Tile& t) {
  amx_configure(amx_full_tiles());
  for (int64_t c = 0; c < t.cols; c += 32) {
    const int64_t nw = std::min<int64_t>(32, t.cols - c);
    for (int64_t r = 0; r < t.rows; r += 32) {
      const int64_t na = std::min<int64_t>(32, t.rows - r);
      if (nw > 16) {
        if (na > 16)
          block<2, 2>(t, c, nw, r, na);
        else
          block<2, 1>(t, c, nw, r, na);
      } else {
        if (na > 16)
          block<1, 2>(t, c, nw, r, na);
        else
          block<1, 1>(t, c, nw, r, na);
      }
    }
  }
}

}  // namespace opchain::cpu
OPCHAIN_TARGET_END()
#else
namespace opchain::cpu {
void amx_int8_pack(const int8_t*, int64_t, int64_t, int8_t*) {}
void amx_int8_tile(const Int8Tile&) {}
void amx_pack_pairs(const uint16_t*, int64_t, int64_t, uint16_t*) {}
void amx_fp8_tile(const Fp8Tile&) {}
void amx_int4_tile(const Int4Tile&) {}
}  // namespace opchain::cpu
#endif
