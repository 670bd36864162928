// The Amx tier's bf16-activation matmul tile on TDPBF16PS (Note [AMX tier], amx.h; Note [bf16 dot],
// cpu_kernels.h). The weights are the A operand straight from the checkpoint's [n, k] layout: an A
// tile is 16 weight rows x 32 bf16, loaded with a row stride of k * 2 bytes, so nothing is repacked.
// The activations are the B operand: rounded to bf16 (RNE, as the avx512bf16 tile does) and transposed
// into the VNNI pair layout once per call. C = 16 weight rows x 16 activation rows, transposed into out.
// For many rows gemm() runs Note [AMX panel gemm] (amx_panel_gemm.cpp) instead, with the same bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/amx_tiles.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/simd.h"

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")
namespace opchain::cpu {
namespace {

using namespace amx_tiles;

// A weight group's A tiles: chunk s < full at w + s * kChunk (row stride `stride` bytes); the last,
// partial chunk (if k % 32) at `tail`, zero-padded so that no byte past a row's end is multiplied.
struct WeightGroup {
  const uint16_t* w;
  int64_t stride;
  const uint16_t* tail;
  int64_t tail_stride;
};

// C(i, j) over all of k, in chunk order from 0 (Note [AMX tier]: the fixed sequence of every element),
// stored to c + (i * NB + j) * 256 floats (C row = weight row, column = activation row).
template <int MA, int NB>
void block(const WeightGroup* g, const uint16_t* const* b, int64_t full, bool tail, float* c) {
  constexpr int kC = MA * NB;
  _tile_zero(0);
  if constexpr (kC > 1) _tile_zero(1);
  if constexpr (kC > 2) _tile_zero(2);
  if constexpr (kC > 3) _tile_zero(3);
  const uint16_t* a[MA];
  int64_t as[MA];
  const uint16_t* bs[NB];
  for (int i = 0; i < MA; ++i) as[i] = g[i].stride;
  for (int64_t s = 0; s < full; ++s) {
    for (int i = 0; i < MA; ++i) a[i] = g[i].w + s * kChunk;
    for (int j = 0; j < NB; ++j) bs[j] = b[j] + s * kTile;
    step<MA, NB>(a, as, bs);
  }
  if (tail) {
    for (int i = 0; i < MA; ++i) {
      a[i] = g[i].tail;
      as[i] = g[i].tail_stride;
    }
    for (int j = 0; j < NB; ++j) bs[j] = b[j] + full * kTile;
    step<MA, NB>(a, as, bs);
  }
  _tile_stored(0, c, 64);
  if constexpr (kC > 1) _tile_stored(1, c + 256, 64);
  if constexpr (kC > 2) _tile_stored(2, c + 512, 64);
  if constexpr (kC > 3) _tile_stored(3, c + 768, 64);
}

// C (16 weight rows x 16 activation rows) into out[n * ldo + m] for m < cols, n < rows. Decode fills
// one to a few columns of C: gathering those beats transposing all 16 (16 loads and 64 shuffles per C
// tile, a fifth of a k = 768 pair's products). Grouped expert matmuls at 1 and 8 tokens, 2 threads,
// Xeon family 6 model 167, two runs of 10 alternated pairs: 0.91-1.01x the transposing time at 1 token,
// 0.97-0.99x at 8, the lm_head row 0.99x.
constexpr int64_t kGatherRows = 4;
void store_transposed(const float* c, float* out, int64_t ldo, int64_t rows, int64_t cols) {
  const __mmask16 mc = first_n16(cols);
  if (rows <= kGatherRows) {
    const __m512i column = _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240);
    for (int64_t n = 0; n < rows; ++n)
      _mm512_mask_storeu_ps(
          out + n * ldo, mc,
          _mm512_i32gather_ps(_mm512_add_epi32(column, _mm512_set1_epi32(static_cast<int>(n))), c, 4));
    return;
  }
  __m512i v[16];
  for (int i = 0; i < 16; ++i) v[i] = _mm512_loadu_si512(c + i * 16);
  transpose16(v);
  for (int64_t n = 0; n < rows; ++n) _mm512_mask_storeu_ps(out + n * ldo, mc, reinterpret_cast<__m512>(v[n]));
}

}  // namespace

void amx_bf16_gemm_tile(const GemmTile& t) {
  if (t.rows <= 0 || t.cols <= 0) return;
  amx_configure(amx_full_tiles());
  const int64_t full = t.k / kChunk, rem = t.k % kChunk, chunks = full + (rem != 0);
  const int64_t act_groups = (t.rows + kGroup - 1) / kGroup, w_groups = (t.cols + kGroup - 1) / kGroup;

  thread_local std::vector<uint16_t> panel_buf;
  uint16_t* panel = scratch_aligned(panel_buf, static_cast<size_t>(act_groups * chunks * kTile));
  for (int64_t h = 0; h < act_groups; ++h)
    pack_activation_pairs(t.x + h * kGroup * t.ldx, t.ldx, std::min(kGroup, t.rows - h * kGroup), t.k, chunks,
                          panel + h * chunks * kTile);
  // Weight tails (k % 32) and a last group of fewer than 16 rows are copied, zero-padded: what lies
  // past a row's end may be NaN or Inf, and NaN * 0 would reach the output.
  thread_local std::vector<uint16_t> tail_buf, partial_buf;
  uint16_t* tails = scratch(tail_buf, static_cast<size_t>(4 * kTile));
  const uint16_t* w = static_cast<const uint16_t*>(t.w);
  auto weight_group = [&](int64_t q, int slot) {
    const int64_t valid = std::min(kGroup, t.cols - q * kGroup);
    const uint16_t* wq = w + q * kGroup * t.ldw;
    if (valid < kGroup) {
      const int64_t width = chunks * kChunk;
      uint16_t* p = scratch(partial_buf, static_cast<size_t>(kGroup * width));
      std::memset(p, 0, static_cast<size_t>(kGroup * width) * sizeof(uint16_t));
      for (int64_t r = 0; r < valid; ++r)
        std::memcpy(p + r * width, wq + r * t.ldw, static_cast<size_t>(t.k) * sizeof(uint16_t));
      return WeightGroup{p, width * 2, p + full * kChunk, width * 2};
    }
    uint16_t* tl = tails + slot * kTile;
    if (rem) {
      for (int64_t r = 0; r < kGroup; ++r)
        _mm512_storeu_si512(tl + r * kChunk, _mm512_maskz_loadu_epi16(first_n32(rem), wq + r * t.ldw + full * kChunk));
    }
    return WeightGroup{wq, t.ldw * 2, tl, kRowBytes};
  };
  amx_compiler_barrier();

  alignas(64) float cbuf[4 * 256];
  const uint16_t* b[2];
  auto write_out = [&](int64_t q, int64_t h, const float* c) {
    store_transposed(c, t.out + h * kGroup * t.ldo + q * kGroup, t.ldo, std::min(kGroup, t.rows - h * kGroup),
                     std::min(kGroup, t.cols - q * kGroup));
  };
  if (act_groups == 1) {
    // Decode and small batches: pairs of weight groups stream past one B tile, the hardware
    // prefetchers alone fetching the 32 rows (16 x 64-byte lines per tile load). Software prefetch of
    // the next pair, spread over the k steps, paid on a Sapphire Rapids VM whose weights sat in its
    // last-level cache (CpuPerf.Linear 1 x 2048 x 4096, one thread), but costs 8-10% where they stream
    // from memory, which is what decode does: on a 480 MB-L3 Xeon (family 6 model 167), 2 threads, the
    // 622 MB lm_head at 1 and 8 rows ran 7.7% and 9.8% faster without it (8 of 8 alternated pairs),
    // the grouped expert matmul of 32 tokens 5.8% (7 of 8); a 1 GiB stand-alone stream reached the plain
    // read rate (31.9 against 30.1 GB/s) without it and 29.6 with it. Note [AMX tier].
    b[0] = panel;
    int64_t q = 0;
    for (; q + 2 <= w_groups; q += 2) {
      const WeightGroup g[2] = {weight_group(q, 0), weight_group(q + 1, 1)};
      amx_compiler_barrier();
      block<2, 1>(g, b, full, rem != 0, cbuf);
      for (int i = 0; i < 2; ++i) write_out(q + i, 0, cbuf + i * 256);
    }
    if (q < w_groups) {
      const WeightGroup g[1] = {weight_group(q, 0)};
      amx_compiler_barrier();
      block<1, 1>(g, b, full, rem != 0, cbuf);
      write_out(q, 0, cbuf);
    }
    return;
  }
  // Two weight groups x two activation groups; every activation group passes over a pair of weight
  // groups while those stay in cache.
  for (int64_t q = 0; q < w_groups; q += 2) {
    const bool pair = q + 1 < w_groups;
    const WeightGroup g[2] = {weight_group(q, 0), pair ? weight_group(q + 1, 1) : WeightGroup{}};
    amx_compiler_barrier();
    for (int64_t h = 0; h < act_groups; h += 2) {
      b[0] = panel + h * chunks * kTile;
      b[1] = b[0] + chunks * kTile;
      const bool two = h + 1 < act_groups;
      if (pair && two) {
        block<2, 2>(g, b, full, rem != 0, cbuf);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) write_out(q + i, h + j, cbuf + (i * 2 + j) * 256);
      } else if (pair) {
        block<2, 1>(g, b, full, rem != 0, cbuf);
        for (int i = 0; i < 2; ++i) write_out(q + i, h, cbuf + i * 256);
      } else if (two) {
        block<1, 2>(g, b, full, rem != 0, cbuf);
        for (int j = 0; j < 2; ++j) write_out(q, h + j, cbuf + j * 256);
      } else {
        block<1, 1>(g, b, full, rem != 0, cbuf);
        write_out(q, h, cbuf);
      }
    }
  }
}

}  // namespace opchain::cpu
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86
