// Note [AMX panel gemm] (amx.h): the Amx tier's bf16 matmul for many activation rows. The operands'
// roles are the bf16 tile's (amx_gemm.cpp) swapped: the activations are the A operand, packed once per
// gemm() call into a panel of A tiles (16 rows x 32 bf16, contiguous), and the weights are the B
// operand, copied per k block into VNNI pair tiles. C = 16 activation rows x 16 weight rows is then a
// block of `out` itself, so the C tiles accumulate in place between k blocks and nothing is transposed.
// Swapping A and B swaps the factors of every product, which is exact: each C element is the same
// sequence of TDPBF16PS steps as in the bf16 tile, so the bits are the same.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/amx_tiles.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
namespace opchain::cpu {
namespace {

using namespace amx_tiles;

int64_t chunks_of(int64_t k) { return (k + kChunk - 1) / kChunk; }

// Activation rows x[0 .. n) (n <= 16) as A tiles, one per chunk: tile row r is row r's 32 bf16 of the
// chunk. Rows past n and k past the end are zero.
void pack_activation_rows(const float* x, int64_t ldx, int64_t n, int64_t k, int64_t chunks, uint16_t* out) {
  for (int64_t r = 0; r < kGroup; ++r) {
    const float* row = x + r * ldx;
    for (int64_t s = 0; s < chunks; ++s) {
      __m512i v = _mm512_setzero_si512();
      if (r < n) {
        const int64_t i = s * kChunk, left = k - i;
        const __m512 lo = _mm512_maskz_loadu_ps(first_n16(left), row + i),
                     hi = _mm512_maskz_loadu_ps(first_n16(std::max<int64_t>(left - 16, 0)), row + i + 16);
        v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      }
      _mm512_store_si512(out + s * kTile + r * kChunk, v);
    }
  }
}

// Weight rows [16q, 16q + 16) over chunks [s0, s0 + steps) as B tiles at dst + s * kTile: row kk of a
// tile holds, for each weight row n, its bf16 pair (2kk, 2kk + 1) of the chunk as dword n. Rows past
// `cols` and k past the end are zero (what lies past a row may be NaN, and NaN * 0 is NaN).
void copy_weight_pairs(const uint16_t* w, int64_t ldw, int64_t cols, int64_t k, int64_t q, int64_t s0, int64_t steps,
                       uint16_t* dst) {
  const uint16_t* rows = w + q * kGroup * ldw;
  const int64_t valid = std::min(kGroup, cols - q * kGroup);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t i = (s0 + s) * kChunk;
    const __mmask32 m = first_n32(k - i);
    __m512i v[16];
    for (int64_t r = 0; r < kGroup; ++r)
      v[r] = r < valid ? _mm512_maskz_loadu_epi16(m, rows + r * ldw + i) : _mm512_setzero_si512();
    transpose16(v);
    for (int kk = 0; kk < 16; ++kk) _mm512_store_si512(dst + s * kTile + kk * kChunk, v[kk]);
  }
}

// The C tiles of a block (C(i, j) in tmm(i * NB + j)): loaded from the accumulator tiles c[i * NB + j]
// (16 x 16 f32, contiguous), or zeroed for the first k block; and stored back there.
template <int kC>
inline void load_c(const float* const* c, bool zero) {
  if (zero) {
    _tile_zero(0);
    if constexpr (kC > 1) _tile_zero(1);
    if constexpr (kC > 2) _tile_zero(2);
    if constexpr (kC > 3) _tile_zero(3);
    return;
  }
  _tile_loadd(0, c[0], 64);
  if constexpr (kC > 1) _tile_loadd(1, c[1], 64);
  if constexpr (kC > 2) _tile_loadd(2, c[2], 64);
  if constexpr (kC > 3) _tile_loadd(3, c[3], 64);
}
template <int kC>
inline void store_c(float* const* c) {
  _tile_stored(0, c[0], 64);
  if constexpr (kC > 1) _tile_stored(1, c[1], 64);
  if constexpr (kC > 2) _tile_stored(2, c[2], 64);
  if constexpr (kC > 3) _tile_stored(3, c[3], 64);
}

// `steps` k steps of C(i, j) += A(i) B(j), A tiles at a[i] + s * kTile, B tiles at b[j] + s * kTile.
template <int MA, int NB>
void panel_block(const uint16_t* const* a, const uint16_t* const* b, int64_t steps, float* const* c, bool first) {
  load_c<MA * NB>(c, first);
  const uint16_t* ap[MA];
  const uint16_t* bp[NB];
  int64_t stride[MA];
  for (int i = 0; i < MA; ++i) stride[i] = kRowBytes;
  for (int64_t s = 0; s < steps; ++s) {
    for (int i = 0; i < MA; ++i) ap[i] = a[i] + s * kTile;
    for (int j = 0; j < NB; ++j) bp[j] = b[j] + s * kTile;
    step<MA, NB>(ap, stride, bp);
  }
  store_c<MA * NB>(c);
}

}  // namespace

int64_t amx_bf16_panel_elems(int64_t rows, int64_t k) { return (rows + kGroup - 1) / kGroup * chunks_of(k) * kTile; }

void amx_bf16_pack_panel(const float* x, int64_t ldx, int64_t rows, int64_t k, int64_t group0, int64_t group1,
                         uint16_t* panel) {
  const int64_t chunks = chunks_of(k);
  for (int64_t h = group0; h < group1; ++h)
    pack_activation_rows(x + h * kGroup * ldx, ldx, std::min(kGroup, rows - h * kGroup), k, chunks,
                         panel + h * chunks * kTile);
}

void amx_bf16_gemm_panel(const AmxPanelTile& t) {
  if (t.rows <= 0 || t.cols <= 0) return;
  amx_configure(amx_full_tiles());
  const int64_t chunks = chunks_of(t.k);
  const int64_t act_groups = (t.rows + kGroup - 1) / kGroup, w_groups = (t.cols + kGroup - 1) / kGroup;
  const uint16_t* w = static_cast<const uint16_t*>(t.w);

  // The C tiles between k blocks, [act group][weight group], 1 KiB each and contiguous: in `out` itself
  // a tile's 16 rows lie a row stride apart (often a multiple of 4 KiB: one L1 set), which measured
  // slower than this buffer and one copy at the end.
  thread_local std::vector<float> acc_buf;
  thread_local std::vector<uint16_t> block_buf;
  float* acc = scratch_aligned(acc_buf, static_cast<size_t>(act_groups * w_groups * 256));
  uint16_t* wblock = scratch_aligned(block_buf, static_cast<size_t>(2 * kAmxPanelKSteps * kTile));

  for (int64_t s0 = 0; s0 < chunks; s0 += kAmxPanelKSteps) {
    const int64_t steps = std::min(kAmxPanelKSteps, chunks - s0);
    for (int64_t q = 0; q < w_groups; q += 2) {
      const int nb = q + 1 < w_groups ? 2 : 1;
      for (int j = 0; j < nb; ++j)
        copy_weight_pairs(w, t.ldw, t.cols, t.k, q + j, s0, steps, wblock + j * steps * kTile);
      amx_compiler_barrier();
      const uint16_t* b[2] = {wblock, wblock + steps * kTile};
      for (int64_t h = 0; h < act_groups; h += 2) {
        const int ma = h + 1 < act_groups ? 2 : 1;
        const uint16_t* a[2] = {t.panel + (h * chunks + s0) * kTile, t.panel + ((h + ma - 1) * chunks + s0) * kTile};
        float* c[4];
        for (int i = 0; i < ma; ++i)
          for (int j = 0; j < nb; ++j) c[i * nb + j] = acc + ((h + i) * w_groups + q + j) * 256;
        if (ma == 2 && nb == 2)
          panel_block<2, 2>(a, b, steps, c, s0 == 0);
        else if (ma == 2)
          panel_block<2, 1>(a, b, steps, c, s0 == 0);
        else if (nb == 2)
          panel_block<1, 2>(a, b, steps, c, s0 == 0);
        else
          panel_block<1, 1>(a, b, steps, c, s0 == 0);
      }
      amx_compiler_barrier();
    }
  }
  for (int64_t r = 0; r < t.rows; ++r) {  // row by row: each row of out written front to back
    const float* c = acc + (r / kGroup) * w_groups * 256 + (r % kGroup) * 16;
    float* o = t.out + r * t.ldo;
    for (int64_t q = 0; q < w_groups; ++q)
      _mm512_mask_storeu_ps(o + q * kGroup, first_n16(t.cols - q * kGroup), _mm512_load_ps(c + q * 256));
  }
}

}  // namespace opchain::cpu
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86
