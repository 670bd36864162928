#pragma once
// Note [AMX tier]: Intel AMX (Sapphire Rapids and later) multiplies 16 x 64-byte tiles held in eight
// tile registers: TDPBF16PS (bf16 pairs into f32) and TDPBUSD/TDPBSSD (int8 quads into int32). The
// cpu vendor uses it for the bf16, int8 and fp8 matmul tiles of Isa::Amx; everything else on that tier runs
// the avx512 loops. Before a thread may touch a tile register, the process must ask Linux for the tile
// data state (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA; granted per process, for all its
// threads) and the thread must load a tile configuration (LDTILECFG: rows and bytes per row of each
// tile). amx_supported() does the first once; amx_configure() the second, skipping a configuration the
// thread already holds.
// The bf16 tile (amx_gemm.cpp) and batch invariance: every tile is configured 16 rows x 64 bytes, always;
// an output element is one element of one C tile, zeroed, then TDPBF16PS over k in 32-wide chunks in
// order from 0, the last chunk zero-padded (weights and activations), never split across k or across
// tiles, then stored. Its value so depends only on its activation row, its weight row and k: not on the
// rows in the call, its row's or weight row's place in a tile, the blocking or the thread. TDPBF16PS
// rounds RNE and treats bf16 denormal inputs as zero and flushes denormal results (as vdpbf16ps), so the
// tier's bits differ from the Avx512Bf16 tier's (another summation order), never from one call to the next.
// Because of that the Amx tier runs this tile (or, for many rows, Note [AMX panel gemm]: the same
// bits) for every row count, decode's single row included: there a 16 x 16 x 32 product consumes
// 1 KiB of weights per ~16 cycles, far beyond memory bandwidth, so batch-1 decode stays memory bound
// without a vdpbf16ps fallback that would sum in another order.
#include <cstdint>

namespace opchain::cpu {

// The CPU has AMX-TILE, AMX-BF16 and AMX-INT8 and the OS granted this process the tile data state.
// Asked once; false on any other architecture.
bool amx_supported();

// The 64-byte LDTILECFG operand (palette 1).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t (<= 64)
  uint8_t rows[16] = {};    // rows of tile t (<= 16)
};

// Loads `cfg` into the calling thread's tile configuration unless it holds that one already. Only
// valid where amx_supported().
void amx_configure(const AmxTileConfig& cfg);

// Every tile 16 rows x 64 bytes: the one configuration all of the tier's kernels use, so a thread loads
// it once, and every TDPBF16PS is the same 16 x 16 x 32 step whatever a call's shape.
const AmxTileConfig& amx_full_tiles();

// GCC's tileloadd intrinsic is an asm without a memory operand: without this barrier the compiler may
// sink the stores that build a tile past the load that reads it, or hoist reads of a tile's store.
inline void amx_compiler_barrier() { asm volatile("" ::: "memory"); }

struct GemmTile;  // simd.h
// The Amx tier's bf16-activation matmul tile (Note [bf16 dot], cpu_kernels.h): the contract of
// GemmTileFn on bf16 weights, on TDPBF16PS. Only valid where amx_supported() and avx512_bf16.
void amx_bf16_gemm_tile(const GemmTile& t);

// Note [AMX panel gemm]: the bf16 tile above gives each call 64 activation rows and runs each C tile
// over all of k, so the weights stream from past L2 once per 64 rows, and where k is long its working
// set (64 activation rows and 32 weight rows of k bf16: 192 k bytes, 1.5 MiB at k = 8192) no longer
// stays in L2 at all: 512 x 9728 -> 2560 ran at 1263-1692 GFLOP/s on two Emerald Rapids cores against
// ~1900-2500 for k <= 4096. For many rows and wide outputs, gemm() instead packs each problem's activations once into
// a panel of VNNI B tiles (shared by all threads) and hands out tiles of up to kAmxPanelRows rows x
// kAmxPanelCols weight rows, which amx_panel_gemm.cpp runs in k blocks of kAmxPanelKSteps chunks: per
// block and pair of weight groups, the weights' block is copied into contiguous A tiles (32 KiB, in L1
// while every activation group passes over it), and the C tiles are stored to an f32 buffer (in L2)
// and reloaded between blocks, then transposed into out once. A weight byte then comes from memory
// once per kAmxPanelRows rows. Each C element is still zeroed, then TDPBF16PS over k in 32-wide chunks
// in order from 0 with the same zero padding, and f32 tile stores and loads are exact: the bits are
// the tile's (Note [AMX tier]), whichever path a row takes. Alternated with the tile through linear, 2
// threads (CpuPerf.DISABLED_AmxPanelVsTile has a one-thread probe): k = 9728 1.43-1.47x at 512 rows;
// k 2048-4096 at 512-1024 rows 1.00-1.12x; at 256 rows and k 2560 0.96-0.97x, hence 256-511 rows only
// for long k. The activation tiles and the C tiles' reloads are TILELOADDT1 (the non-temporal hint):
// with plain loads the 32 KiB of activations a block streams from L2 evicted the weight block from L1
// (CpuPerf.DISABLED_AmxBlockCeilings: 16 k steps at 65-73% of the register peak, 88-92% with the hint;
// panel over tile 1.24-1.40x instead of 1.11-1.25x; the dense model's projections 2-14% faster). While
// a block's products run, the next k block's activations and the next weight block are prefetched into
// L2 (the first pass over a k block otherwise read it from past L2: a stand-alone loop of the panel's
// structure went from 57-60% to 68-72% of the peak; the dense projections 1-10% and 4-11% faster).
// Measured and not kept: 512-column tiles, C stored straight into out in the last block, the next
// block's weights copied between the current block's products (each 5-15% slower), the last block's
// transposes into out spread over the next block's products (5-10% slower: vector work beside the
// tile unit did not run for free), the hint on the weights' copy (no change).
inline constexpr int64_t kAmxPanelMinRows = 256;
inline constexpr int64_t kAmxPanelLongK = 8192;
inline constexpr int64_t kAmxPanelRows = 512;
inline constexpr int64_t kAmxPanelCols = 256;
inline constexpr int64_t kAmxPanelKSteps = 16;  // 512 of k per block
// The panel is packed once per call and read back from past L2 by every column tile, so narrow outputs
// do not repay it: a MoE router's 4096 x 2048 -> 128 took 11.2-11.5 ms against the tile's 8.7-9.2, and
// the k and v projections (512 and 1024 outputs) ran 5-15% slower than on the tile in both models.
inline constexpr int64_t kAmxPanelMinOutputs = 2048;
inline bool amx_panel_suits(int64_t rows, int64_t k, int64_t n) {
  return n >= kAmxPanelMinOutputs && (rows >= kAmxPanelRows || (rows >= kAmxPanelMinRows && k >= kAmxPanelLongK));
}

// A panel of `rows` x k: the 16-row groups' VNNI B tiles, k block by k block (kAmxPanelKSteps chunks,
// the last block the rest): block kb's tiles for all groups are one contiguous run, group after group.
// (Group-major, groups lay ceil(k / 32) KiB apart: at k = 4096 a power of two, so a block's 32 groups
// fell into the same L2 sets; 512 x 4096 -> 2048 ran at 0.71x the tile's rate.)
// uint16 elements of such a panel.
int64_t amx_bf16_panel_elems(int64_t rows, int64_t k);
// Packs the 16-row groups [group0, group1) of x (rows x k, row stride ldx) into `panel`, rounding to
// bf16 (nearest even); rows past `rows` and k past the end are zero.
void amx_bf16_pack_panel(const float* x, int64_t ldx, int64_t rows, int64_t k, int64_t group0, int64_t group1,
                         uint16_t* panel);
// out[r * ldo + c] = dot(x row row0 + r, w row c) for r < rows, c < cols: x given as the problem's panel
// of panel_rows rows, row0 a multiple of 16.
struct AmxPanelTile {
  const uint16_t* panel = nullptr;
  int64_t panel_rows = 0, row0 = 0, rows = 0;
  const void* w = nullptr;  // bf16 [cols, k], row stride ldw
  int64_t ldw = 0, cols = 0, k = 0;
  float* out = nullptr;
  int64_t ldo = 0;
};
void amx_bf16_gemm_panel(const AmxPanelTile& t);
// Whether the panel reads whole pairs of weight groups' A tiles where they lie instead of copying each
// block into contiguous tiles: where the block's 32 rows x 16 lines share no L1 set more than
// kAmxPanelMaxWeightWays times (of 12), so that it stays in L1 while the activation groups pass (a row
// stride of 5120 or 19456 bytes, Qwen3-4B's 2560 and 9728; not 4096 or 8192). The copy then costs
// nothing: 512 x 2560 -> 19456 and 512 x 9728 -> 2560 at 45-48% of the two-thread register peak
// instead of 44-45%, the dense model's q_proj, gate_up and down 3-5% faster on balance (alternated;
// CpuPerf.DISABLED_AmxPrefillShareOfPeak). The same tiles, so the same bits.
inline constexpr int kAmxPanelMaxWeightWays = 8;
bool amx_panel_weights_in_place(const void* w, int64_t ldw);

}  // namespace opchain::cpu
