#pragma once
// The SIMD tiles of the cpu vendor's quantised matmul (quant_gemm.cpp prepares the activations and hands
// out the tiles), one implementation per ISA, chosen with the active ISA (cpu_kernels.h):
//   int4 (Int4Group weights, bf16 activations): the codes are unpacked in registers, 2 x 32 nibbles (AVX-512)
//     or 64 (AVX2) per step, and multiplied with the activations: on AVX512_BF16 a nibble q becomes the
//     bf16 16 + q by two bit operations (exponent 4, q in the top mantissa bits), vdpbf16ps sums x (16 + q)
//     exactly-multiplied, and (16 + zero) times the group's activation sum is taken back out; in the FMA
//     form of Note [bf16 dot forms] (the default on Intel) the odd and even values 16 + q are made as f32
//     and two FMAs replace each vdpbf16ps, with Intel's vdpbf16ps bits. The Avx512 tier (AVX-512 without
//     AVX512_BF16: Skylake-SP to Ice Lake) runs the FMA form built without AVX512_BF16, the activations
//     rounded in integer lanes as vcvtne2ps2bf16 does: the same bits (int4_avx512_impl.inc). On AVX2,
//     where k and the groups are multiples of 64, a nibble becomes the f32 32 + q by a shift and an and per
//     32 codes, a byte interleave with the exponent per 16 and a shift or an and per 8, f32 FMAs sum x (32
//     + q) exactly-multiplied and (32 + zero) times the group sum is taken back out; other shapes widen 16
//     codes per step to int32, subtract the zero in integers and convert to f32. Each group's partial dot
//     is scaled into an f32 accumulator. Tiles of up to 4 rows (2 in the FMA form) unpack the codes as they
//     read them; larger ones unpack a few columns at a time into a panel in L1 that their row blocks
//     share, never the whole weight. Isa::Amx runs the same tile,
//     or, where set_amx_int4_enabled chose it, TDPBF16PS on the same bf16 values 16 + q (below).
//   int8 (Int8Channel weights, int8 activations): integer dots, exact: vpdpbusd on the weight codes
//     flipped to w + 128, the activation row's code sum taking the 128s back out (AVX512_VNNI on zmm, on
//     every AVX-512 tier whose CPU has it, Cascade Lake and Ice Lake included; on the Avx2 tier the VEX
//     form on ymm where the CPU has AVX-VNNI), vpmaddubsw on |w| and sign(x, w) (AVX2
//     without AVX-VNNI; activation codes lie in [-127, 127], so no pair sum saturates), and on Isa::Amx
//     TDPBSSD on 16 weight rows x 16 activation rows at a time (amx_quant.cpp). The int32 sums are the
//     same on every path, so every int8 path gives the same bits.
// Every output element is one fixed sequence of operations over its own row and weight row (Note [cpu
// kernels]): the tile shape never changes a value.
#include <cstdint>
#include <type_traits>

namespace opchain::cpu {

// Rows in blocks of 4, then one block of the 1-3 left: f(r, std::integral_constant<int, n>) per block. The
// tiles that stream the codes past every row of a block take each tail in one pass (3 rows were a 2-row
// and a 1-row pass, each unpacking every code).
template <class F>
inline void for_blocks_of_four(int64_t rows, const F& f) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) f(r, std::integral_constant<int, 4>{});
  switch (rows - r) {
    case 3:
      f(r, std::integral_constant<int, 3>{});
      break;
    case 2:
      f(r, std::integral_constant<int, 2>{});
      break;
    case 1:
      f(r, std::integral_constant<int, 1>{});
      break;
    default:
      break;
  }
}

// out[r * ldo + c] = sum_g scale[c, g] * sum_{k in g} x[r, k] * (code[c, k] - zero[c, g]) (+ nothing else)
// for r < rows, c < cols.
struct Int4Tile {
  const void* x = nullptr;  // prepared activations (QuantKernels::int4_prepare), rows of ldx elements, or
                            // their 16-row blocks where the kernels pack them (QuantKernels::int4_pack)
  int64_t ldx = 0;
  const uint8_t* codes = nullptr;  // the tile's first weight row; rows code_ld bytes apart
  int64_t code_ld = 0;
  const float* scales = nullptr;  // [cols, groups] from the tile's first column
  const float* zeros = nullptr;   // [cols, groups], or null: 8
  const float* x_sums = nullptr;  // [rows, groups]: each group's sum of the prepared activations
  int64_t groups = 0, group_size = 0, k = 0;
  float* out = nullptr;
  int64_t ldo = 0, rows = 0, cols = 0;
};

// out[r * ldo + c] = float(sum_k x[r, k] * (w[c, k] - zero[c])) * x_scale[r] * w_scale[c].
struct Int8Tile {
  const int8_t* x = nullptr;  // activation codes, rows of ldx (a multiple of 64, zero-padded past k)
  int64_t ldx = 0;
  const float* x_scales = nullptr;
  const int32_t* x_sums = nullptr;  // sum of each row's codes (for zero points)
  const int8_t* w = nullptr;        // the tile's first weight row; rows ldw apart
  int64_t ldw = 0;
  const float* w_scales = nullptr;  // from the tile's first column
  const float* w_zeros = nullptr;   // or null
  int64_t k = 0;
  float* out = nullptr;
  int64_t ldo = 0, rows = 0, cols = 0;
  // Optional: the same rows as QuantKernels::int8_pack lays them out, from the tile's first row (which
  // starts a block of kInt8PackRows). Null: the tile reads x.
  const int8_t* xp = nullptr;
};

// out[r * ldo + c] = sum_g x_scales[r, g] * w_scale(c, g) * sum_{k in g} x[r, k] * fp8(code[c, k]), g over
// groups of `group` channels (the last may be short), w_scale(c, g) = w_scales[c * w_groups + g] or, with
// w_groups == 1, w_scales[c]. x holds the activations as the tier's Fp8Kernels prepare them.
struct Fp8Tile {
  const uint16_t* x = nullptr;
  int64_t ldx = 0;
  const float* x_scales = nullptr;  // [rows, groups], rows `groups` apart, from the tile's first row
  const uint8_t* codes = nullptr;   // the tile's first weight row; rows code_ld bytes apart
  int64_t code_ld = 0;
  const float* w_scales = nullptr;  // from the tile's first column
  int64_t w_groups = 1;
  int64_t group = 0, groups = 0, k = 0;
  float* out = nullptr;
  int64_t ldo = 0, rows = 0, cols = 0;
};
// Channels per step of the fp8 tile: k and group must be multiples of it.
inline constexpr int64_t kFp8Chunk = 64;
using Fp8TileFn = void (*)(const Fp8Tile&);
// A row of k fp8 codes (k a multiple of kFp8Chunk) as the fp8 tiles read activations: each code's value
// as bf16 (exact), in the order they unpack weight codes (fp8_unpack.inc).
using Fp8PackFn = void (*)(const uint8_t* codes, int64_t k, uint16_t* out);
// A row of k activations as the Fp8Group form quantises them (quantize_row_fp8: its scales and codes,
// bit for bit, groups of `group`), the codes laid out as Fp8PackFn lays them; k and group multiples of
// kFp8Chunk.
using Fp8PrepareFn = void (*)(const float* x, int64_t k, int64_t group, uint16_t* out, float* scales);
// The fp8 tile of the active ISA and how its activations are prepared, once per row and call.
// AVX-512 with BF16 and VBMI: e4m3 codes become bf16 through two vpermi2b lookups, then vdpbf16ps; the
// products are exact, the sums f32; Fp8Tile::x is the prepared rows. From 5 rows a tile unpacks two
// weight columns at a time into an L1 panel its 4-row blocks share (the same dot chains). Amx: TDPBF16PS
// (amx_quant.cpp); Fp8Tile::x is the prepared rows packed by pack_blocks in 16-row blocks, from the tile's first row.
struct Fp8Kernels {
  Fp8TileFn tile = nullptr;
  Fp8PrepareFn prepare = nullptr;
  Fp8PackFn pack_codes = nullptr;  // the layout prepare writes, from codes (its specification)
  void (*pack_blocks)(const uint16_t* x, int64_t k, int64_t rows, uint16_t* out) = nullptr;  // Amx only
};
const Fp8Kernels* fp8_kernels();  // null where no fp8 tile runs

// Rows per QuantKernels::int8_pack block.
inline constexpr int64_t kInt8PackRows = 16;

struct QuantKernels {
  // int4: in_features and group_size must be multiples of int4_chunk (else the generic path runs); the
  // tile may lay out larger multiples differently (int4_prepare and int4_tile agree on it).
  int64_t int4_chunk = 0;
  int64_t int4_x_bytes = 0;  // bytes per prepared activation element (2: bf16, 4: f32)
  // One activation row as the int4 tile reads it: rounded to bf16 and permuted within each chunk to the
  // order the tile unpacks a chunk's nibbles in (which depends on k and group); and each group's sum of
  // the rounded values, in channel order (sums[k / group]).
  void (*int4_prepare)(const float* x, int64_t k, int64_t group, void* out, float* sums) = nullptr;
  void (*int4_tile)(const Int4Tile&) = nullptr;
  // One activation row as quantize_row_int8 codes it (the same codes and scale), and the codes' sum.
  float (*int8_prepare)(const float* x, int64_t k, int8_t* codes, int32_t* sum) = nullptr;
  void (*int8_tile)(const Int8Tile&) = nullptr;
  // Optional (null: none). Up to kInt8PackRows activation rows (int8_prepare's codes, ldx apart, ldx a
  // multiple of 64) into one block of kInt8PackRows * ldx bytes in the int8 tile's own layout, rows past
  // `rows` zero. quant_gemm packs problems of at least int8_pack_rows rows and passes Int8Tile::xp.
  void (*int8_pack)(const int8_t* x, int64_t ldx, int64_t rows, int8_t* out) = nullptr;
  int64_t int8_pack_rows = 0;
  // Optional: the kernels whose int4 tile takes an int4 weight that int4_chunk does not divide (groups of
  // 16 or 32 under a 64-channel chunk), before the generic path would. A weight's every row takes the
  // same tile, so results stay batch invariant.
  const QuantKernels* int4_other = nullptr;
  // Optional (Isa::Amx): up to 16 int4_prepare rows of k into one block of the int4 tile's own layout
  // (amx_pack_pairs). Where set, quant_gemm prepares whole 16-row blocks and Int4Tile::x is the packed
  // blocks from the tile's first row.
  void (*int4_pack)(const uint16_t* x, int64_t k, int64_t rows, uint16_t* out) = nullptr;
};

// The kernels of the active ISA, or null where only the generic path exists.
const QuantKernels* quant_kernels();

// The Int8 precision's int4 tile (ActivationForm::Int8Group, Note [Matmul precision]): int4 codes times
// int8 activation codes, each group's dot exact in integers, out[r * ldo + c] = sum over groups g, in
// order, in f32, of (float(dot[g]) - zero[c, g] * float(x_sums[r, g])) * (x_scales[r, g] * scales[c, g]):
// the reference's operations (quant_matmul.h), so every path gives the reference's bits.
struct Int4Int8Tile {
  const int8_t* x = nullptr;  // rows as Int4Int8Kernels::prepare lays them out, ldx bytes apart
  int64_t ldx = 0;
  const float* x_scales = nullptr;  // [rows, groups], from the tile's first row
  const int32_t* x_sums = nullptr;  // [rows, groups]: each group's sum of the codes
  const uint8_t* codes = nullptr;   // the tile's first weight row; rows code_ld bytes apart
  int64_t code_ld = 0;
  const float* scales = nullptr;  // [cols, groups] from the tile's first column
  const float* zeros = nullptr;   // [cols, groups], or null: 8
  int64_t groups = 0, group_size = 0, k = 0;
  float* out = nullptr;
  int64_t ldo = 0, rows = 0, cols = 0;
};
struct Int4Int8Kernels {
  int64_t chunk = 0;  // k and group_size must be multiples of it (else the generic path runs)
  // One activation row (in code-column order): each group of `group` quantised as quantize_row_int8
  // quantises a row (the same codes and scale), the codes laid out as the tile reads them.
  void (*prepare)(const float* x, int64_t k, int64_t group, int8_t* codes, float* scales, int32_t* sums) = nullptr;
  void (*tile)(const Int4Int8Tile&) = nullptr;
  const Int4Int8Kernels* other = nullptr;  // narrower chunks, for shapes `chunk` does not divide
};
// vpdpbusd on zmm (AVX-512 tiers whose CPU has AVX512_VNNI: 128 channels a step, groups and k multiples
// of 128), else vpmaddubsw on the nibbles as u8 and the activation codes (AVX2, every x86 tier but
// Generic; 64 channels a step); null where none runs.
const Int4Int8Kernels* int4_int8_kernels();

// Where the two bf16 dot forms agree (bf16_dot_forms_agree()), the Avx512Bf16 int4 tile takes vdpbf16ps for
// tiles of few rows even in the FmaPairs form, for speed, without changing a bit. Tests: false makes
// every int4 tile take bf16_dot_form() itself, so the FMA form's few-row tiles run where they can be
// checked against vdpbf16ps bit for bit.
void set_int4_form_by_rows(bool on);

// Isa::Amx's int4 tile, chosen for the process (OPCHAIN_CPU_AMX_INT4=1 in the environment, or this call):
// TDPBF16PS on the codes' bf16 values 16 + q, staged per chunk into A tiles (few rows) or unpacked once
// into a panel of 32 weight rows (many), the activations packed into pair blocks (amx_quant.cpp). Its
// summation order is its own, so it runs at every row count once chosen (batch invariance). Not the
// default: on Sapphire Rapids class cores it gives 2.2-2.4x the prefill of the vector tile but ~40% less
// batch-1 and batch-8 decode, because the unpacked weights must go through memory to reach a tile and
// the stores and tile loads do not overlap (docs/performance/emerald-rapids.md, AMX section).
bool amx_int4_enabled();
void set_amx_int4_enabled(bool on);

// The Avx2 tier's int8 tile is AVX-VNNI's vpdpbusd where the CPU has avx_vnni (unless
// OPCHAIN_CPU_AVXVNNI=0 is in the environment), else vpmaddubsw. Tests and benchmarks: choose;
// false (and nothing changes) when asked for AVX-VNNI on a CPU without it.
bool avx_vnni_supported();
bool avx_vnni_enabled();
bool set_avx_vnni_enabled(bool on);

// amx_quant.cpp: Isa::Amx's int8 tile (needs Int8Tile::xp) and its activation packing.
void amx_int8_tile(const Int8Tile& t);
void amx_int8_pack(const int8_t* x, int64_t ldx, int64_t rows, int8_t* out);
// Isa::Amx's fp8 and int4 tiles (amx_quant.cpp), and their activation blocks: `rows` (<= 16) prepared rows
// of k bf16 into AMX's pair layout, 16 x 32 bf16 per k step of 32 (rows past `rows` zero).
void amx_fp8_tile(const Fp8Tile& t);
void amx_int4_tile(const Int4Tile& t);
void amx_pack_pairs(const uint16_t* x, int64_t k, int64_t rows, uint16_t* out);

}  // namespace opchain::cpu
