#pragma once
// The cpu vendor: the fast, multithreaded kernels of the product. Same keys as reference.
// Note [cpu kernels]: every kernel splits its work over ThreadPool::global() in contiguous chunks, and
// every output element is computed by one fixed sequence of float operations that depends only on that
// element's own inputs and sizes: never on the number of rows in the call, the tiling or the thread
// count. So a row's result is the same alone or in a batch (batch invariance), and runs are
// bit-for-bit reproducible. Only the SIMD code path (picked once from the CPU) changes the rounding.
#include <cstdint>

#include "ops/registry.h"

namespace opchain {

inline constexpr const char* kCpuVendor = "cpu";

void register_cpu_kernels(Registry& reg);

namespace cpu {

// The SIMD code path of the matmul, dot and attention inner loops. Picked once from the CPU
// (__builtin_cpu_supports, cpuid); OPCHAIN_CPU_ISA=generic|avx2|avx512|avx512bf16|amx in the environment
// overrides it. The tiers are the ones users' CPUs come in:
// - Avx2: AVX2 + FMA (AMD Zen 1-3, Intel Haswell to Alder Lake).
// - Avx512: AVX-512F without a bf16 dot (Intel Skylake-SP, Cascade Lake, Ice Lake): the zmm f32
//   kernels; bf16 precision rounds the activations and runs them (Note [bf16 dot]).
// - Avx512Bf16: the same loops with AVX512_BF16's bf16 tiles (AMD Zen 4/5, Intel Cooper Lake, and
//   Sapphire Rapids and later where AMX is not wanted).
// - Amx: the Avx512Bf16 path with the bf16 and int8 matmul tiles on Intel AMX (Note [AMX tier], amx.h);
//   it needs the full AVX-512 set (F/BW/VL/BF16/VNNI), AMX-TILE/BF16/INT8 and the kernel's permission
//   for the tile data state.
// Each tier is its own summation order for the matmuls; tests walk every tier the CPU has, so a CPU
// with a higher tier also tests the lower ones' code.
enum class Isa : uint8_t { Generic, Avx2, Avx512, Avx512Bf16, Amx };
// Every tier, lowest first: what tests and benchmarks walk over (each skipped where unsupported).
inline constexpr Isa kAllIsas[] = {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16, Isa::Amx};
const char* isa_name(Isa isa);
bool isa_supported(Isa isa);
Isa active_isa();
// Tests and benchmarks: switch the code path; false (and nothing changes) when the CPU lacks it.
bool set_active_isa(Isa isa);
// The row count from which a tile of the tiers with 8 or fewer f32 lanes (Generic, Avx2) takes the
// packed GEMM instead of register blocks (simd_impl.inc, packed_min_rows(), says what each costs where): 5 on
// Intel cores, 16 on others, as the zmm tiers always. The same bits either way (Note [Fixed reduction
// order]); tests set it to walk both paths on any CPU.
int64_t narrow_packed_min_rows();
void set_narrow_packed_min_rows(int64_t rows);

// Note [bf16 dot]: linear, grouped_matmul and fused_moe called with MatmulPrecision::Bf16 on bf16
// weights (Note [Matmul precision]) round the tile's activations to bf16 once and multiply with
// AVX512_BF16 vdpbf16ps (Isa::Avx512Bf16) or AMX TDPBF16PS (Isa::Amx, every row count: Note [AMX tier])
// against the weights as stored, accumulating in f32: no widening, no repacked weights. On the other
// tiers (Generic, Avx2, Avx512) the same rounded activations go through the f32 kernels instead: same
// contract, other summation order. Each tier has its own summation order; every
// one is batch invariant and thread-count deterministic.
bool bf16_dot_supported();

// Note [bf16 dot forms]: the Avx512Bf16 tier's bf16 tile computes each 32-element step of a dot in one of
// two forms, with the same lanes and the same tree after them:
// - Vdpbf16ps: one vdpbf16ps. AMD Zen 4 issues it once per cycle, twice the rate of its f32 FMAs.
// - FmaPairs: the odd and the even bf16 elements widened to f32 (a zero-masked load, a shift) and two
//   FMAs, the odd product first: exactly what Intel's vdpbf16ps computes (measured bit for bit; the
//   products are exact in f32), except that vdpbf16ps flushes subnormal inputs and results to zero.
//   Intel cores (Sapphire Rapids, Emerald Rapids) issue vdpbf16ps only once per two cycles, half the
//   rate of their two f32 FMA ports, so there the FMA form is the faster one. Its tiles of 12 rows or
//   more run the f32 packed GEMM walking k in this form's order (Note [bf16 pair order], simd_impl.inc).
// The default is FmaPairs on Intel and Vdpbf16ps elsewhere; OPCHAIN_CPU_BF16_DOT=fma|vdpbf16ps overrides
// it, and tests switch it with set_bf16_dot_form(). Each form is batch invariant and deterministic;
// only the form, like the ISA, can change the rounding (on AMD the two may differ in the last bits).
enum class Bf16DotForm : uint8_t { Vdpbf16ps, FmaPairs };
const char* bf16_dot_form_name(Bf16DotForm form);
Bf16DotForm bf16_dot_form();
void set_bf16_dot_form(Bf16DotForm form);
// Whether this CPU's vdpbf16ps computes exactly the FmaPairs form (Intel): there a kernel may take
// either form per tile, by speed alone, without changing a bit.
bool bf16_dot_forms_agree();

}  // namespace cpu
}  // namespace opchain
