#pragma once
// Internal helpers shared by the cpu vendor's kernel files: registration, threading, scratch
// buffers and conversions. Not part of the vendor's public interface (cpu_kernels.h).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <source_location>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "vendors/cpu/cpu_kernels.h"

namespace opchain::cpu {

// One register function per op key, one file per op (src/vendors/cpu/<key>.cpp).
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) void register_##key(Registry& reg);
OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X

// "cpu::rms_norm_bf16"
inline std::string kernel_name(OpType op, DType t) {
  return "cpu::" + std::string(op_key(op)) + "_" + std::string(dtype_name(t));
}

template <OpType Op>
void add_kernel(Registry& reg, DType t, typename OpTraits<Op>::Fn fn,
                std::source_location where = std::source_location::current()) {
  reg.add<Op>(kCpuVendor, t, fn, kernel_name(Op, t), KernelFlags{}, where);
}

// Below this many (rough) element operations a kernel runs on the calling thread: waking the pool
// costs more than it saves. The split never changes results (Note [cpu kernels]).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;

// fn(begin, end) over contiguous chunks of [0, n), one chunk per pool thread, or inline when small.
// The lambda handed to the pool captures one reference, so std::function stores it without allocating.
template <class F>
void parallel_rows(int64_t n, int64_t work_per_row, const F& fn) {
  if (n <= 0) return;
  ThreadPool& pool = ThreadPool::global();
  if (pool.num_threads() == 1 || n == 1 || n * std::max<int64_t>(work_per_row, 1) < kMinParallelWork) {
    fn(int64_t{0}, n);
    return;
  }
  pool.parallel_for(n, [&fn](int, int64_t b, int64_t e) { fn(b, e); });
}

// fn(part) for part in [0, parts), each on its own pool thread (parts <= pool size).
template <class F>
void parallel_parts(int parts, const F& fn) {
  if (parts <= 1) {
    if (parts == 1) fn(0);
    return;
  }
  ThreadPool::global().parallel_for(parts, [&fn](int, int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) fn(static_cast<int>(p));
  });
}

// fn(i) for every work item i in [0, items): thread t of T runs the contiguous items whose cost
// midpoint lies in [t, t + 1) * total / T. cost_before[i] is the summed cost of items before i.
template <class F>
void parallel_balanced(const std::vector<int64_t>& cost_before, int64_t total, const F& fn) {
  const size_t n = cost_before.size();
  if (n == 0) return;
  const int threads = ThreadPool::global().num_threads();
  if (threads == 1 || n == 1 || total < 4 * kMinParallelWork) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  const int parts = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), n));
  auto owner = [&](size_t i) {
    const int64_t next = i + 1 < n ? cost_before[i + 1] : total;
    const int64_t mid = cost_before[i] + (next - cost_before[i]) / 2;
    return static_cast<int>(static_cast<__int128>(mid) * parts / std::max<int64_t>(total, 1));
  };
  parallel_parts(parts, [&](int part) {
    size_t lo = 0, hi = n;  // first item of `part`: owners are non-decreasing in i
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (owner(mid) < part)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t i = lo; i < n && owner(i) == part; ++i) fn(i);
  });
}

// fn(i) for every work item i in [0, n), handed out one at a time from a shared counter: a thread
// that finishes early takes the next item, so items whose time the cost model cannot predict (memory
// bound ones, or a core slowed by a neighbour) still end together. Which thread runs an item never
// changes its result (Note [cpu kernels]).
template <class F>
void parallel_dynamic(size_t n, int64_t total_cost, const F& fn) {
  if (n == 0) return;
  const int threads = ThreadPool::global().num_threads();
  if (threads == 1 || n == 1 || total_cost < 4 * kMinParallelWork) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  parallel_parts(static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), n)), [&](int) {
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      fn(i);
  });
}

// Growable scratch: callers keep `buf` thread_local (or static), so after warm-up nothing allocates.
template <class T>
T* scratch(std::vector<T>& buf, size_t n) {
  if (buf.size() < n) buf.resize(std::max(n, buf.size() + buf.size() / 2));
  return buf.data();
}

// The same, the pointer aligned to 64 bytes (a cache line): a SIMD kernel that streams a buffer of whole
// vectors from L1 loads each from one line, not two (a vector's load split across lines takes two of the
// core's load slots).
template <class T>
T* scratch_aligned(std::vector<T>& buf, size_t n) {
  constexpr size_t kExtra = (64 + sizeof(T) - 1) / sizeof(T);
  T* p = scratch(buf, n + kExtra);
  const size_t miss = reinterpret_cast<uintptr_t>(p) % 64;
  return miss == 0 ? p : reinterpret_cast<T*>(reinterpret_cast<char*>(p) + (64 - miss));
}

// Growable scratch on 2 MiB-aligned transparent huge pages (where THP is on or `madvise`): for the AMX
// panel's activations and C tiles, which a 512 x 256 tile walks over hundreds of 4 KiB pages per k
// block (a TLB entry each); on 2 MiB pages the Sapphire Rapids VM's dense prefill ran gate_up 1-5% and
// down 0-12% faster (Note [AMX panel gemm]). Like scratch(), keep it thread_local; unlike it, what the
// buffer held is not kept when it grows.
class HugeScratch {
 public:
  HugeScratch() = default;
  HugeScratch(const HugeScratch&) = delete;
  HugeScratch& operator=(const HugeScratch&) = delete;
  ~HugeScratch();
  void* get(size_t bytes);

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// f16 -> f32 without branches (vectorisable), exact for every input including subnormals, inf, NaN.
inline float f16_to_f32_fast(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa, f32 place
  const uint32_t exp = em & 0x0f800000u;
  const uint32_t normal = em + ((127u - 15u) << 23);
  const uint32_t infnan = normal + ((128u - 16u) << 23);
  float sub;  // subnormal: renormalise through the float unit
  const uint32_t sub_bits_in = normal + (1u << 23);
  std::memcpy(&sub, &sub_bits_in, 4);
  sub -= 6.103515625e-05f;  // 2^-14, bits 113 << 23
  uint32_t sub_bits;
  std::memcpy(&sub_bits, &sub, 4);
  const uint32_t bits = (exp == 0 ? sub_bits : exp == 0x0f800000u ? infnan : normal) | sign;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Row of a float-typed buffer (f32/bf16/f16) as f32; exact.
inline void row_to_f32(const void* src, DType t, float* dst, int64_t n) {
  switch (t) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32_fast(s[i]);
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
  }
}

// Shared row helpers of rms_norm and add_rms_norm (defined in rms_norm.cpp).
struct SimdKernels;
void rms_norm_row(const SimdKernels& sk, const float* x, const float* w, float eps, int64_t h, float* out);
const float* weight_f32(const Tensor& w, std::vector<float>& buf);

// Whether MoE row t is real (meta->x_active_mask, when present, is nonzero there).
inline bool moe_row_active(const MoeMetadata* meta, int64_t t) {
  return !meta || meta->x_active_mask.is_null() || meta->x_active_mask.data<uint8_t>()[t] != 0;
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// out[c] = silu(in[c]) * in[i + c]: the row step of silu_and_mul and swiglu (SimdKernels::silu_mul).
void silu_mul_row(const float* in, int64_t i, float* out);

}  // namespace opchain::cpu
