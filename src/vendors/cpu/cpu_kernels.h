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
// (__builtin_cpu_supports); OPCHAIN_CPU_ISA=generic|avx2|avx512 in the environment overrides it.
enum class Isa : uint8_t { Generic, Avx2, Avx512 };
const char* isa_name(Isa isa);
bool isa_supported(Isa isa);
Isa active_isa();
// Tests and benchmarks: switch the code path; false (and nothing changes) when the CPU lacks it.
bool set_active_isa(Isa isa);

// Note [bf16 dot mode]: an explicit opt-in for bf16 models. linear, grouped_matmul and fused_moe with
// bf16 weights round their f32 activations to bf16 (round to nearest even) and multiply with AVX512_BF16
// vdpbf16ps, accumulating in f32: twice the math rate and half the activation bytes of the default path,
// at bf16-activation accuracy (like llama.cpp's bf16 path or a transformers bf16 run), so results differ
// from reference beyond the op table's tolerance. Still batch invariant and thread-count deterministic.
// Off by default; OPCHAIN_CPU_BF16_DOT=1 in the environment turns it on at start where the CPU has
// avx512_bf16 (else it stays off). Every other op keeps its f32 numerics.
bool bf16_dot_supported();
bool bf16_dot_active();
// false (and nothing changes) when turning it on on a CPU without avx512_bf16.
bool set_bf16_dot(bool on);

}  // namespace cpu
}  // namespace opchain
