// Note [AMX panel gemm] (amx.h): the Amx tier's bf16 matmul for many activation rows. The operands are
// the bf16 tile's (amx_gemm.cpp): the weights are the A operand, copied per k block into contiguous A
// tiles (or read where they lie when their rows spread over the L1 sets: amx_panel_weights_in_place),
// and the activations the B operand in VNNI pairs, packed once per gemm() call into a panel that
// every tile of the problem reads. C = 16 weight rows x 16 activation rows accumulates in an f32 buffer
// between k blocks and is transposed into `out` once at the end. (The roles swapped, activations as A
// and weights copied as VNNI B tiles, give the same bits and need no transposed output, but transpose
// every weight tile per 512 rows: 2-4% slower through the dense model's projections.)
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

// Weight rows [16q, 16q + 16) over chunks [s0, s0 + steps) as A tiles at dst + s * kTile (row r: weight
// row 16q + r's 32 bf16 of the chunk). Rows past `cols` and k past the end are zero (what lies past a
// row may be NaN, and NaN * 0 is NaN). A whole tile (16 rows, 32 of k) moves through tile register 4,
// free between blocks: one strided tile load and one store per KiB instead of 16 vector loads and
// stores, which took the dense model's gate_up and down projections 7-15% faster.
void copy_weight_rows(const uint16_t* w, int64_t ldw, int64_t cols, int64_t k, int64_t q, int64_t s0, int64_t steps,
                      uint16_t* dst) {
  const uint16_t* rows = w + q * kGroup * ldw;
  const int64_t valid = std::min(kGroup, cols - q * kGroup);
  int64_t whole = 0;
  if (valid == kGroup) {
    for (; whole < steps && (s0 + whole + 1) * kChunk <= k; ++whole) {
      _tile_loadd(4, rows + (s0 + whole) * kChunk, ldw * 2);
      _tile_stored(4, dst + whole * kTile, kRowBytes);
    }
  }
  for (int64_t r = 0; r < kGroup; ++r)
    for (int64_t s = whole; s < steps; ++s) {
      const int64_t i = (s0 + s) * kChunk;
      _mm512_store_si512(
          dst + s * kTile + r * kChunk,
          r < valid ? _mm512_maskz_loadu_epi16(first_n32(k - i), rows + r * ldw + i) : _mm512_setzero_si512());
    }
}

// The C tiles of a block (C(i, j) in tmm(i * NB + j)): loaded from the accumulator tiles c[i * NB + j]
// (16 x 16 f32, contiguous), or zeroed for the first k block; and stored back there. Loaded with the
// non-temporal hint, as the activations (Note [AMX panel gemm]): read once per block, they need not
// displace the weight block from L1.
template <int kC>
inline void load_c(const float* const* c, bool zero) {
  if (zero) {
    _tile_zero(0);
    if constexpr (kC > 1) _tile_zero(1);
    if constexpr (kC > 2) _tile_zero(2);
    if constexpr (kC > 3) _tile_zero(3);
    return;
  }
  _tile_stream_loadd(0, c[0], 64);
  if constexpr (kC > 1) _tile_stream_loadd(1, c[1], 64);
  if constexpr (kC > 2) _tile_stream_loadd(2, c[2], 64);
  if constexpr (kC > 3) _tile_stream_loadd(3, c[3], 64);
}
template <int kC>
inline void store_c(float* const* c) {
  _tile_stored(0, c[0], 64);
  if constexpr (kC > 1) _tile_stored(1, c[1], 64);
  if constexpr (kC > 2) _tile_stored(2, c[2], 64);
  if constexpr (kC > 3) _tile_stored(3, c[3], 64);
}

// Lines of the activations the next k block reads, fetched into L2 a few per k step of this one.
struct L2Prefetch {
  const char* next = nullptr;
  int64_t left = 0, per_step = 0;
  void step() {
    for (int64_t i = 0; i < per_step && left > 0; ++i, --left, next += 64) _mm_prefetch(next, _MM_HINT_T1);
  }
};

// The next weight block's rows (rows x `lines` 64-byte lines at stride ld bytes), fetched into L2 a
// line or two per k step, so that its copy into A tiles does not wait on memory. (A prefetch past the
// k tail reads nothing it could fault on.)
struct WeightPrefetch {
  const char* base = nullptr;
  int64_t ld = 0, lines = 0, rows = 0, i = 0, per_step = 0;
  void step() {
    for (int64_t n = 0; n < per_step && i < rows * lines; ++n, ++i)
      _mm_prefetch(base + i / lines * ld + i % lines * 64, _MM_HINT_T1);
  }
};

// `steps` k steps of C(i, j) += A(i) B(j), A tiles at a[i] + s * kTile, B tiles at b[j] + s * kTile.
template <int MA, int NB>
void panel_block(const uint16_t* const* a, int64_t astride, int64_t astep, const uint16_t* const* b, int64_t steps,
                 float* const* c, bool first, L2Prefetch& ahead, WeightPrefetch& wahead) {
  load_c<MA * NB>(c, first);
  const uint16_t* ap[MA];
  const uint16_t* bp[NB];
  int64_t stride[MA];
  for (int i = 0; i < MA; ++i) stride[i] = astride;
  for (int64_t s = 0; s < steps; ++s) {
    for (int i = 0; i < MA; ++i) ap[i] = a[i] + s * astep;
    for (int j = 0; j < NB; ++j) bp[j] = b[j] + s * kTile;
    step<MA, NB, true>(ap, stride, bp);
    ahead.step();
    wahead.step();
  }
  store_c<MA * NB>(c);
}

}  // namespace

bool amx_panel_weights_in_place(const void* w, int64_t ldw) {
  const int64_t row_bytes = ldw * 2;
  if (row_bytes % 64 != 0 || reinterpret_cast<uintptr_t>(w) % 64 != 0) return false;
  int lines_in_set[64] = {};  // a pair of groups' block: 32 rows x kAmxPanelKSteps lines, by L1 set
  for (int64_t r = 0; r < 2 * kGroup; ++r)
    for (int64_t l = 0; l < kAmxPanelKSteps; ++l) ++lines_in_set[(r * row_bytes / 64 + l) % 64];
  return *std::max_element(lines_in_set, lines_in_set + 64) <= kAmxPanelMaxWeightWays;
}

int64_t amx_bf16_panel_elems(int64_t rows, int64_t k) { return (rows + kGroup - 1) / kGroup * chunks_of(k) * kTile; }

void amx_bf16_pack_panel(const float* x, int64_t ldx, int64_t rows, int64_t k, int64_t group0, int64_t group1,
                         uint16_t* panel) {
  const int64_t chunks = chunks_of(k), groups = (rows + kGroup - 1) / kGroup;
  for (int64_t s0 = 0; s0 < chunks; s0 += kAmxPanelKSteps) {
    const int64_t steps = std::min(kAmxPanelKSteps, chunks - s0);
    uint16_t* block = panel + s0 * groups * kTile;
    for (int64_t h = group0; h < group1; ++h)
      pack_activation_pairs(x + h * kGroup * ldx + s0 * kChunk, ldx, std::min(kGroup, rows - h * kGroup),
                            k - s0 * kChunk, steps, block + h * steps * kTile);
  }
}

void amx_bf16_gemm_panel(const AmxPanelTile& t) {
  if (t.rows <= 0 || t.cols <= 0) return;
  amx_configure(amx_full_tiles());
  const int64_t chunks = chunks_of(t.k), panel_groups = (t.panel_rows + kGroup - 1) / kGroup, g0 = t.row0 / kGroup;
  const int64_t act_groups = (t.rows + kGroup - 1) / kGroup, w_groups = (t.cols + kGroup - 1) / kGroup;
  const uint16_t* w = static_cast<const uint16_t*>(t.w);

  // The C tiles between k blocks, 16 weight rows x 16 activation rows of f32 each: a block's four tiles
  // (activation groups h, h + 1 x weight groups q, q + 1 for even q and h) lie in one 4 KiB run. (Laid
  // out [h][q], they were w_groups KiB apart, a multiple of 4 KiB: the same L1 sets, with the weight
  // block there too; the products' loop ran 5-10% slower.) On huge pages, as the panel (cpu_common.h).
  thread_local HugeScratch acc_buf;
  thread_local std::vector<uint16_t> block_buf;
  float* acc = static_cast<float*>(acc_buf.get(static_cast<size_t>((w_groups + 1) / 2 * 2 * act_groups * 256) * 4));
  uint16_t* wblock = scratch_aligned(block_buf, static_cast<size_t>(2 * kAmxPanelKSteps * kTile));
  auto acc_tile = [&](int64_t h, int64_t q) { return ((q / 2 * act_groups + h) * 2 + q % 2) * 256; };

  // The first pass over a k block's activations (512 rows: 512 KiB) would read them from past L2; the
  // passes of the block before fetch them, and the last block the first one's, which the next tile of
  // the same rows reads.
  auto block_of = [&](int64_t s0) {
    return t.panel + (s0 * panel_groups + g0 * std::min(kAmxPanelKSteps, chunks - s0)) * kTile;  // amx.h
  };
  const bool weights_in_place = amx_panel_weights_in_place(w, t.ldw);
  const int64_t step_count = (w_groups + 1) / 2 * ((act_groups + 1) / 2);
  for (int64_t s0 = 0; s0 < chunks; s0 += kAmxPanelKSteps) {
    const int64_t steps = std::min(kAmxPanelKSteps, chunks - s0);
    const int64_t next_s0 = s0 + steps < chunks ? s0 + steps : 0;
    L2Prefetch ahead;
    ahead.next = reinterpret_cast<const char*>(block_of(next_s0));
    ahead.left = act_groups * std::min(kAmxPanelKSteps, chunks - next_s0) * kTile * 2 / 64;
    ahead.per_step = (ahead.left + step_count * steps - 1) / (step_count * steps);
    for (int64_t q = 0; q < w_groups; q += 2) {
      const int ma = q + 1 < w_groups ? 2 : 1;
      // A pair of whole groups over whole chunks is read in place; a partial group or the k tail is
      // copied with zeros past its end (what lies there may be NaN).
      const bool in_place = weights_in_place && (q + 2) * kGroup <= t.cols && (s0 + steps) * kChunk <= t.k;
      const uint16_t* a[2] = {wblock, wblock + steps * kTile};
      int64_t astride = kRowBytes, astep = kTile;
      if (in_place) {
        a[0] = w + q * kGroup * t.ldw + s0 * kChunk;
        a[1] = a[0] + kGroup * t.ldw;
        astride = t.ldw * 2;
        astep = kChunk;
      } else {
        for (int i = 0; i < ma; ++i)
          copy_weight_rows(w, t.ldw, t.cols, t.k, q + i, s0, steps, wblock + i * steps * kTile);
      }
      amx_compiler_barrier();
      // The weight block after this one: the next pair of groups, or the next k block's first pair.
      WeightPrefetch wahead;
      const bool last_pair = q + 2 >= w_groups;
      if (!last_pair || s0 + steps < chunks) {
        const int64_t nq = last_pair ? 0 : q + 2, ns0 = last_pair ? s0 + steps : s0;
        wahead.base = reinterpret_cast<const char*>(w + nq * kGroup * t.ldw + ns0 * kChunk);
        wahead.ld = t.ldw * 2;
        wahead.lines = std::min(kAmxPanelKSteps, chunks - ns0);
        wahead.rows = std::min(2 * kGroup, t.cols - nq * kGroup);
        const int64_t pair_steps = (act_groups + 1) / 2 * steps;
        wahead.per_step = (wahead.rows * wahead.lines + pair_steps - 1) / pair_steps;
      }
      const uint16_t* block = block_of(s0);
      for (int64_t h = 0; h < act_groups; h += 2) {
        const int nb = h + 1 < act_groups ? 2 : 1;
        const uint16_t* b[2] = {block + h * steps * kTile, block + (h + nb - 1) * steps * kTile};
        float* c[4];
        for (int i = 0; i < ma; ++i)
          for (int j = 0; j < nb; ++j) c[i * nb + j] = acc + acc_tile(h + j, q + i);
        if (ma == 2 && nb == 2)
          panel_block<2, 2>(a, astride, astep, b, steps, c, s0 == 0, ahead, wahead);
        else if (ma == 2)
          panel_block<2, 1>(a, astride, astep, b, steps, c, s0 == 0, ahead, wahead);
        else if (nb == 2)
          panel_block<1, 2>(a, astride, astep, b, steps, c, s0 == 0, ahead, wahead);
        else
          panel_block<1, 1>(a, astride, astep, b, steps, c, s0 == 0, ahead, wahead);
      }
      amx_compiler_barrier();
    }
  }
  // C tiles are [weight row][activation row]: transposed into out, with non-temporal stores where a
  // run of 16 floats is whole and 64-byte aligned. The panel's outputs (>= 512 rows x 2048 floats) pass
  // what the caches keep for the next op, and a plain store first reads the line it writes: the dense
  // model's prefill 512 2.3-6% faster in total, alternated (gate_up 6-11%, the op reading its output
  // up to 1 ms slower over 6 layers).
  const bool stream = t.ldo % 16 == 0 && reinterpret_cast<uintptr_t>(t.out) % 64 == 0;
  for (int64_t h = 0; h < act_groups; ++h) {
    const int64_t rows = std::min(kGroup, t.rows - h * kGroup);
    for (int64_t q = 0; q < w_groups; ++q) {
      const float* c = acc + acc_tile(h, q);
      __m512i v[16];
      for (int i = 0; i < 16; ++i) v[i] = _mm512_load_si512(c + i * 16);
      transpose16(v);
      float* o = t.out + h * kGroup * t.ldo + q * kGroup;
      if (stream && t.cols - q * kGroup >= kGroup) {
        for (int64_t r = 0; r < rows; ++r) _mm512_stream_ps(o + r * t.ldo, reinterpret_cast<__m512>(v[r]));
        continue;
      }
      const __mmask16 m = first_n16(t.cols - q * kGroup);
      for (int64_t r = 0; r < rows; ++r) _mm512_mask_storeu_ps(o + r * t.ldo, m, reinterpret_cast<__m512>(v[r]));
    }
  }
  if (stream) _mm_sfence();  // the streamed lines are visible before the caller's parallel region ends
}

}  // namespace opchain::cpu
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86
