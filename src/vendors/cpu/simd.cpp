// The SIMD code paths of the cpu vendor: simd_impl.inc compiled once per ISA, each in its own target
// region, so the build needs no -march flag; the path is chosen at run time (cpu_kernels.h).
#include "vendors/cpu/simd.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "vendors/cpu/cpu_common.h"

#if defined(__x86_64__) || defined(__i386__)
#define OPCHAIN_CPU_X86 1
// GCC 12 flags the intrinsics' own `__Y = __Y` undefined-vector idiom (GCC PR105593); not our code.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
#define OPCHAIN_CPU_X86 0
#endif

// A region of functions compiled for an ISA the build flags do not enable (GCC: target pragma;
// clang: attribute push). Only functions in it may use that ISA's intrinsics.
#define OPCHAIN_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define OPCHAIN_TARGET_BEGIN(isa) OPCHAIN_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define OPCHAIN_TARGET_END() OPCHAIN_PRAGMA(clang attribute pop)
#else
#define OPCHAIN_TARGET_BEGIN(isa) OPCHAIN_PRAGMA(GCC push_options) OPCHAIN_PRAGMA(GCC target(isa))
#define OPCHAIN_TARGET_END() OPCHAIN_PRAGMA(GCC pop_options)
#endif

// Generic: GCC vector extensions, 4 lanes (SSE2 on x86-64, NEON on arm64). No FMA.
namespace opchain::cpu::generic {
typedef float vec __attribute__((vector_size(16)));
typedef uint32_t vecu __attribute__((vector_size(16)));
constexpr int64_t kLanes = 4;
static inline vec vzero() { return vec{0.0f, 0.0f, 0.0f, 0.0f}; }
static inline vec vset1(float a) { return vec{a, a, a, a}; }
static inline vec vload(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void vstore(float* p, vec v) { std::memcpy(p, &v, sizeof v); }
static inline vec vload_bf16(const uint16_t* p) {
  vecu u = {p[0], p[1], p[2], p[3]};
  u <<= 16;
  vec v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
static inline vec vload_f16(const uint16_t* p) {
  return vec{f16_to_f32_fast(p[0]), f16_to_f32_fast(p[1]), f16_to_f32_fast(p[2]), f16_to_f32_fast(p[3])};
}
static inline vec vfma(vec a, vec b, vec acc) { return acc + a * b; }
static inline vec vmul(vec a, vec b) { return a * b; }
static inline float vreduce(vec v) { return (v[0] + v[2]) + (v[1] + v[3]); }
static inline void vkeep(vec&) {}
#include "vendors/cpu/simd_impl.inc"
const SimdKernels kKernels = {Isa::Generic, gemm_tile<DType::F32>, gemm_tile<DType::BF16>, gemm_tile<DType::F16>,
                              dot, dot_block, axpy_multi, scale};
}  // namespace opchain::cpu::generic

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("avx2,fma,f16c")
// AVX2 + FMA: 8 lanes.
namespace opchain::cpu::avx2 {
using vec = __m256;
constexpr int64_t kLanes = 8;
static inline vec vzero() { return _mm256_setzero_ps(); }
static inline vec vset1(float a) { return _mm256_set1_ps(a); }
static inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec vload_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline vec vload_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline vec vfma(vec a, vec b, vec acc) { return _mm256_fmadd_ps(a, b, acc); }
static inline vec vmul(vec a, vec b) { return _mm256_mul_ps(a, b); }
static inline void vkeep(vec& v) { asm("" : "+x"(v)); }
static inline float vreduce(vec v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}
#include "vendors/cpu/simd_impl.inc"
const SimdKernels kKernels = {Isa::Avx2, gemm_tile<DType::F32>, gemm_tile<DType::BF16>, gemm_tile<DType::F16>,
                              dot, dot_block, axpy_multi, scale};
}  // namespace opchain::cpu::avx2
OPCHAIN_TARGET_END()

OPCHAIN_TARGET_BEGIN("avx512f,avx2,fma,f16c")
// AVX-512F: 16 lanes. (avx512_bf16's dot instructions would round the f32 activations to bf16, which
// the f32-accumulation contract of linear does not allow, so bf16 weights are widened instead.)
namespace opchain::cpu::avx512 {
using vec = __m512;
constexpr int64_t kLanes = 16;
static inline vec vzero() { return _mm512_setzero_ps(); }
static inline vec vset1(float a) { return _mm512_set1_ps(a); }
static inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
static inline void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec vload_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline vec vload_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
static inline vec vfma(vec a, vec b, vec acc) { return _mm512_fmadd_ps(a, b, acc); }
static inline vec vmul(vec a, vec b) { return _mm512_mul_ps(a, b); }
static inline void vkeep(vec& v) { asm("" : "+v"(v)); }
static inline float vreduce(vec v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}
#include "vendors/cpu/simd_impl.inc"
const SimdKernels kKernels = {Isa::Avx512, gemm_tile<DType::F32>, gemm_tile<DType::BF16>, gemm_tile<DType::F16>,
                              dot, dot_block, axpy_multi, scale};
}  // namespace opchain::cpu::avx512
OPCHAIN_TARGET_END()
#endif  // OPCHAIN_CPU_X86

namespace opchain::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Generic: return "generic";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Generic: return true;
#if OPCHAIN_CPU_X86
    case Isa::Avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      __builtin_cpu_init();  // checks the OS saves zmm state too
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    default: return false;
#endif
  }
  return false;
}

namespace {

Isa detect_isa() {
  if (const char* env = std::getenv("OPCHAIN_CPU_ISA")) {
    for (Isa i : {Isa::Generic, Isa::Avx2, Isa::Avx512})
      if (std::string_view(env) == isa_name(i) && isa_supported(i)) return i;
  }
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Generic;
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(detect_isa())};
  return slot;
}

}  // namespace

Isa active_isa() { return static_cast<Isa>(isa_slot().load(std::memory_order_relaxed)); }

bool set_active_isa(Isa isa) {
  if (!isa_supported(isa) || !simd_for(isa)) return false;
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

const SimdKernels* simd_for(Isa isa) {
  switch (isa) {
    case Isa::Generic: return &generic::kKernels;
#if OPCHAIN_CPU_X86
    case Isa::Avx2: return &avx2::kKernels;
    case Isa::Avx512: return &avx512::kKernels;
#else
    default: return nullptr;
#endif
  }
  return nullptr;
}

const SimdKernels& simd() { return *simd_for(active_isa()); }

}  // namespace opchain::cpu
