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
// Because of that the Amx tier runs this tile for every row count, decode's single row included: there
// a 16 x 16 x 32 product consumes 1 KiB of weights per ~16 cycles, far beyond memory bandwidth, so
// batch-1 decode stays memory bound without a vdpbf16ps fallback that would sum in another order.
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

}  // namespace opchain::cpu
