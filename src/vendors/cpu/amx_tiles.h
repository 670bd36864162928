#pragma once
// What the Amx tier's bf16 matmul kernels share (amx_gemm.cpp: the tile for any row count;
// amx_panel_gemm.cpp: Note [AMX panel gemm]): the tile shapes, the 16 x 16 dword transpose that builds
// VNNI pair tiles, the activations' packing into such tiles, and one k step of a block of C tiles.
#include <algorithm>
#include <cstdint>

#include "vendors/cpu/isa_target.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
namespace opchain::cpu::amx_tiles {

inline constexpr int64_t kChunk = 32;              // bf16 of k per tile row: one TDPBF16PS step
inline constexpr int64_t kGroup = 16;              // rows of a tile: weight rows or activation rows
inline constexpr int64_t kTile = kGroup * kChunk;  // uint16 per A or B tile (16 rows x 64 bytes)
inline constexpr int64_t kRowBytes = kChunk * 2;

// r[i] lane j <- r[j] lane i, for 16 x 16 dwords.
inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + e], 128-bit lane L: element 4L + e of rows 4i .. 4i + 3
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512i a = _mm512_shuffle_i32x4(r[e], r[4 + e], 0x88), b = _mm512_shuffle_i32x4(r[e], r[4 + e], 0xdd);
    const __m512i c = _mm512_shuffle_i32x4(r[8 + e], r[12 + e], 0x88),
                  d = _mm512_shuffle_i32x4(r[8 + e], r[12 + e], 0xdd);
    t[e] = _mm512_shuffle_i32x4(a, c, 0x88);
    t[4 + e] = _mm512_shuffle_i32x4(b, d, 0x88);
    t[8 + e] = _mm512_shuffle_i32x4(a, c, 0xdd);
    t[12 + e] = _mm512_shuffle_i32x4(b, d, 0xdd);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

inline __mmask32 first_n32(int64_t n) {
  return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << n) - 1);
}
inline __mmask16 first_n16(int64_t n) { return n >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << n) - 1); }

// One k step of C(i, j) += A(i) B(j) for MA A tiles x NB B tiles, C(i, j) in tmm(i * NB + j). Tile
// numbers are immediates: C in tmm0-3, A and B in tmm4-7, each A and B tile in its own register (loads
// never wait for a product to release a source). kStreamB loads the B tiles with TILELOADDT1, the
// non-temporal hint: where B streams from L2 past an A block held in L1, plain loads evict that block
// (a 2 x 2 block over 16 k steps: 65-73% of the register peak with plain loads, 88-92% with the hint).
#define OPCHAIN_AMX_LOAD_B(t, p)           \
  do {                                     \
    if constexpr (kStreamB)                \
      _tile_stream_loadd(t, p, kRowBytes); \
    else                                   \
      _tile_loadd(t, p, kRowBytes);        \
  } while (0)
//
// Where B streams from L2 (kStreamB), its loads go first, ahead of the A tiles' from L1 and of the
// products: the longest wait starts earliest. A stand-alone 2 x 2 block over 16 k steps with its C tiles
// reloaded per block, as the panel runs it: 59-69% of the register peak with the interleaved order
// below, 65-77% with B first (12 alternated rounds, one core, Xeon family 6 model 167). Software
// prefetches of the next step's B lines made it slower (36-54%).
template <int MA, int NB, bool kStreamB = false>
inline void step(const uint16_t* const* a, const int64_t* as, const uint16_t* const* b) {
  if constexpr (kStreamB && MA == 2 && NB == 2) {
    _tile_stream_loadd(6, b[0], kRowBytes);
    _tile_stream_loadd(7, b[1], kRowBytes);
    _tile_loadd(4, a[0], as[0]);
    _tile_loadd(5, a[1], as[1]);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  } else if constexpr (MA == 2 && NB == 2) {
    _tile_loadd(4, a[0], as[0]);
    OPCHAIN_AMX_LOAD_B(6, b[0]);
    _tile_dpbf16ps(0, 4, 6);
    OPCHAIN_AMX_LOAD_B(7, b[1]);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, a[1], as[1]);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  } else if constexpr (MA == 2 && NB == 1) {
    OPCHAIN_AMX_LOAD_B(4, b[0]);
    _tile_loadd(5, a[0], as[0]);
    _tile_dpbf16ps(0, 5, 4);
    _tile_loadd(6, a[1], as[1]);
    _tile_dpbf16ps(1, 6, 4);
  } else if constexpr (MA == 1 && NB == 2) {
    _tile_loadd(4, a[0], as[0]);
    OPCHAIN_AMX_LOAD_B(6, b[0]);
    _tile_dpbf16ps(0, 4, 6);
    OPCHAIN_AMX_LOAD_B(7, b[1]);
    _tile_dpbf16ps(1, 4, 7);
  } else {
    static_assert(MA == 1 && NB == 1);
    OPCHAIN_AMX_LOAD_B(4, b[0]);
    _tile_loadd(5, a[0], as[0]);
    _tile_dpbf16ps(0, 5, 4);
  }
}
#undef OPCHAIN_AMX_LOAD_B

// Activation rows x[0 .. n) (n <= 16) as B tiles, one per chunk: tile row kk holds, for each row m, the
// bf16 pair (2kk, 2kk + 1) of the chunk as dword m. Rows past n and k past the end are zero.
inline void pack_activation_pairs(const float* x, int64_t ldx, int64_t n, int64_t k, int64_t chunks, uint16_t* out) {
  for (int64_t s = 0; s < chunks; ++s) {
    const int64_t i = s * kChunk, left = k - i;
    const __mmask16 m0 = first_n16(left), m1 = first_n16(std::max<int64_t>(left - 16, 0));
    __m512i v[16];
    for (int64_t r = 0; r < 16; ++r) {
      if (r < n) {
        const __m512 lo = _mm512_maskz_loadu_ps(m0, x + r * ldx + i),
                     hi = _mm512_maskz_loadu_ps(m1, x + r * ldx + i + 16);
        v[r] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      } else {
        v[r] = _mm512_setzero_si512();
      }
    }
    transpose16(v);
    for (int kk = 0; kk < 16; ++kk) _mm512_storeu_si512(out + s * kTile + kk * kChunk, v[kk]);
  }
}

}  // namespace opchain::cpu::amx_tiles
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86
