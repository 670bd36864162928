// Isa::Amx's int8 tile (quant_simd.h; Note [AMX tier], amx.h). TDPBSSD multiplies a 16 x 64-byte tile
// of weight codes (A: 16 weight rows' codes for 64 channels, loaded in place, stride the weight's row
// stride) with the same 64 channels of 16 activation rows in AMX's VNNI layout (B: row kk holds, for
// each activation row m, its codes 4kk..4kk+3; built once per call by amx_int8_pack), adding exact
// int32 dots into a 16 x 16 C tile [weight row][activation row].
// TDPBSSD (signed x signed) rather than TDPBUSD (unsigned A): the weight codes then need no w + 128
// flip, which would mean copying every weight tile first; both run at the same rate (the peak probe in
// tests/vendors/cpu_quant_perf_test.cpp times both). The C tiles hold sum_k x w exactly, the avx512q
// tile's sum_k x (w + 128) - 128 sum_k x, so the float ops after it (the same ones, in the same order)
// give the same bits.
#include <algorithm>
#include <cstring>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/quant_simd.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
namespace opchain::cpu {
namespace {

constexpr int64_t kBlock = 64;  // channels per tile step: 64 bytes per tile row

// Tile registers: C 0..3 (2 weight groups x 2 activation groups), A (weights) 4..5, B (activations)
// 6..7; every tile 16 rows of 64 bytes, so one configuration serves every shape.
const AmxTileConfig& tile_config() {
  static const AmxTileConfig cfg = [] {
    AmxTileConfig c;
    for (int i = 0; i < 8; ++i) {
      c.rows[i] = 16;
      c.colsb[i] = 64;
    }
    return c;
  }();
  return cfg;
}

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

}  // namespace

void amx_int8_pack(const int8_t* x, int64_t ldx, int64_t rows, int8_t* out) {
  for (int64_t i = 0; i < ldx; i += kBlock) {
    __m512i v[16];
    for (int64_t m = 0; m < 16; ++m) v[m] = m < rows ? _mm512_loadu_si512(x + m * ldx + i) : _mm512_setzero_si512();
    transpose16(v);  // v[kk]: each row's codes 4kk..4kk+3, row after row
    for (int kk = 0; kk < 16; ++kk) _mm512_storeu_si512(out + i / kBlock * 1024 + kk * 64, v[kk]);
  }
}

void amx_int8_tile(const Int8Tile& t) {
  amx_configure(tile_config());
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
}  // namespace opchain::cpu
#endif
