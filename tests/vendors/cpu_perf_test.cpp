// Throughput probes of the cpu vendor's hot kernels (disabled by default: run with
// --gtest_also_run_disabled_tests --gtest_filter='CpuPerf.*'). They time process CPU time, not wall
// time, so a loaded machine changes the figures less; each prints GFLOP/s or GB/s per thread.
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/simd.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void time_linear(int64_t rows, int64_t in, int64_t out, int reps, MatmulPrecision p = MatmulPrecision::F32) {
  std::mt19937 g(1);
  Tensor x = rand_f32(g, {rows, in});
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.1f, 0.1f);
  Tensor o = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  k.fn(LinearArgs{x, w, Tensor{}, o, p});
  const double t0 = cpu_seconds();
  for (int i = 0; i < reps; ++i) k.fn(LinearArgs{x, w, Tensor{}, o, p});
  const double s = (cpu_seconds() - t0) / reps;
  std::printf("linear bf16 %lldx%lldx%lld: %.2f ms cpu, %.1f GFLOP/s per cpu-second, %.1f GB/s of weights\n",
              static_cast<long long>(rows), static_cast<long long>(in), static_cast<long long>(out), s * 1e3,
              2.0 * rows * in * out / s * 1e-9, 2.0 * in * out / s * 1e-9);
}

// Decode-style matvec over weights far larger than the last-level cache, on all threads: wall-clock GB/s
// of weights streamed (compare with `opchain bench`'s measured read bandwidth).
// `out` 32768 is 128 MiB of bf16, which a large last-level cache holds (480 MB on the AMX VM); 524288
// (2 GiB) comes from memory on any machine.
void stream_matvec(int64_t rows, int reps, MatmulPrecision p = MatmulPrecision::F32, int64_t out = 32768) {
  std::mt19937 g(2);
  const int64_t in = 2048;
  Tensor x = rand_f32(g, {rows, in});
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.1f, 0.1f);
  Tensor o = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  k.fn(LinearArgs{x, w, Tensor{}, o, p});
  std::vector<double> secs;
  for (int i = 0; i < reps; ++i) {
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    k.fn(LinearArgs{x, w, Tensor{}, o, p});
    clock_gettime(CLOCK_MONOTONIC, &b);
    secs.push_back((b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec));
  }
  std::sort(secs.begin(), secs.end());
  const double bytes = 2.0 * in * out;
  std::printf("stream %lld rows x %lld MiB bf16, %s precision: median %.1f GB/s, best %.1f GB/s\n",
              static_cast<long long>(rows), static_cast<long long>(in * out * 2 >> 20),
              std::string(matmul_precision_name(p)).c_str(), bytes / secs[secs.size() / 2] * 1e-9,
              bytes / secs.front() * 1e-9);
}

TEST(CpuPerf, DISABLED_Stream) {
  for (int64_t rows : {1, 2, 8}) stream_matvec(rows, 30);
  for (int64_t rows : {1, 2, 3, 8}) stream_matvec(rows, 30, MatmulPrecision::Bf16);
}

// The same past any last-level cache. On the AMX VM (480 MB L3) the Amx and Avx512 tiers stream 1-3 rows
// at the same rate from memory but not from L3 (docs/performance/sapphire-rapids.md, third session).
TEST(CpuPerf, DISABLED_StreamFromMemory) {
  for (int64_t rows : {1, 3, 8}) stream_matvec(rows, 5, MatmulPrecision::Bf16, 524288);
}

// Expert offsets (cumulative rows per expert) of `tokens` tokens each picking k of `experts` at random.
std::vector<int32_t> random_expert_offsets(std::mt19937& g, int64_t tokens, int64_t experts, int64_t k) {
  std::vector<int> count(static_cast<size_t>(experts), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int> e(static_cast<size_t>(experts));
    for (int64_t i = 0; i < experts; ++i) e[static_cast<size_t>(i)] = static_cast<int>(i);
    std::shuffle(e.begin(), e.end(), g);
    for (int64_t j = 0; j < k; ++j) ++count[static_cast<size_t>(e[static_cast<size_t>(j)])];
  }
  std::vector<int32_t> off{0};
  for (int c : count) off.push_back(off.back() + c);
  return off;
}

// Wall-clock seconds of `reps` calls of f(i), sorted.
template <class F>
std::vector<double> wall_seconds_sorted(int reps, const F& f) {
  std::vector<double> secs;
  for (int i = 0; i < reps; ++i) {
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    f(i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    secs.push_back((b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec));
  }
  std::sort(secs.begin(), secs.end());
  return secs;
}

// A batched-decode MoE matmul: `tokens` tokens each pick 8 of 128 experts of out x in bf16, one
// grouped_matmul at bf16 precision on all threads. Four copies of the experts (1.5 GiB) are taken in
// turn, so every call reads its weights from memory, as a decode step of a model past the last-level
// cache does. Wall-clock GB/s of the expert weights each call touches: median and best of `reps`.
void stream_grouped(int64_t tokens, int reps, int64_t in = 2048, int64_t out = 768) {
  std::mt19937 g(4);
  const int64_t experts = 128, k = 8;
  const int sets = 4;
  const std::vector<int32_t> off = random_expert_offsets(g, tokens, experts, k);
  int64_t touched = 0;
  for (int64_t e = 0; e < experts; ++e) touched += off[e + 1] > off[e];
  Tensor x = rand_f32(g, {tokens * k, in});
  std::vector<std::vector<Tensor>> w(static_cast<size_t>(sets));
  for (auto& set : w)
    for (int64_t e = 0; e < experts; ++e) set.push_back(rand_tensor(g, DType::BF16, {out, in}, -0.05f, 0.05f));
  Tensor o = Tensor::empty(DType::F32, {tokens * k, out});
  const Tensor offsets = i32_tensor(off);
  const auto kern = resolve_kernel<OpType::GroupedMatmul>(builtin_registry(), kCpuVendor, DType::BF16);
  const std::vector<double> secs = wall_seconds_sorted(reps, [&](int i) {
    kern.fn(GroupedMatmulArgs{x, offsets, &w[static_cast<size_t>(i % sets)], o, 0, MatmulPrecision::Bf16});
  });
  const double bytes = 2.0 * static_cast<double>(touched * in * out);
  std::printf(
      "grouped bf16 %lld -> %lld, %lld tokens (%lld experts touched): median %.2f ms, %.1f GB/s of expert "
      "weights (best %.1f)\n",
      static_cast<long long>(in), static_cast<long long>(out), static_cast<long long>(tokens),
      static_cast<long long>(touched), secs[secs.size() / 2] * 1e3, bytes / secs[secs.size() / 2] * 1e-9,
      bytes / secs.front() * 1e-9);
}

// OPCHAIN_PERF_ROWS=a,b,... where set, else `fallback`.
std::vector<int64_t> row_counts_from_env(std::vector<int64_t> fallback) {
  const char* e = std::getenv("OPCHAIN_PERF_ROWS");
  if (e == nullptr) return fallback;
  std::vector<int64_t> counts;
  for (const char* p = e; *p;) {
    char* end = nullptr;
    counts.push_back(std::strtoll(p, &end, 10));
    p = *end ? end + 1 : end;
  }
  return counts;
}

// Batched decode's lm_head (Qwen3: 151936 x 2048 bf16, 622 MB) on all threads at bf16 precision, its
// weights far past the last-level cache: 32 rows (compute bound), or OPCHAIN_PERF_ROWS=8,32,... Wall clock.
TEST(CpuPerf, DISABLED_LmHead) {
  std::mt19937 g(6);
  const int64_t in = 2048, out = 151936;
  const std::vector<int64_t> counts = row_counts_from_env({32});
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.02f, 0.02f);
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  for (const int64_t rows : counts) {
    Tensor x = rand_f32(g, {rows, in});
    Tensor o = Tensor::empty(DType::F32, {rows, out});
    const LinearArgs args{x, w, Tensor{}, o, MatmulPrecision::Bf16};
    k.fn(args);
    for (int rep = 0; rep < 3; ++rep) {
      timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      k.fn(args);
      clock_gettime(CLOCK_MONOTONIC, &b);
      const double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
      std::printf("lm_head %lld x 2048 x 151936 bf16: %.1f ms wall, %.1f GFLOP/s, %.1f GB/s of weights\n",
                  static_cast<long long>(rows), s * 1e3, 2.0 * rows * in * out / s * 1e-9, 2.0 * in * out / s * 1e-9);
    }
  }
}

// Prefill-sized matmuls on all threads at bf16 precision, wall clock, best and median of `reps`: the MoE
// experts' grouped matmuls (512 tokens x 8 of 128 experts, gate/up and down shapes; `sets` copies of the
// experts taken in turn, so the weights come from memory as in a model far past the last-level cache)
// and the attention projections of a dense layer.
void time_prefill_grouped(int64_t in, int64_t out, int sets, int reps) {
  std::mt19937 g(5);
  const int64_t experts = 128, k = 8, tokens = 512;
  Tensor offsets = i32_tensor(random_expert_offsets(g, tokens, experts, k));
  Tensor x = rand_f32(g, {tokens * k, in});
  Tensor o = Tensor::empty(DType::F32, {tokens * k, out});
  std::vector<std::vector<Tensor>> w(static_cast<size_t>(sets));
  for (auto& set : w)
    for (int64_t e = 0; e < experts; ++e) set.push_back(rand_tensor(g, DType::BF16, {out, in}, -0.05f, 0.05f));
  const auto kern = resolve_kernel<OpType::GroupedMatmul>(builtin_registry(), kCpuVendor, DType::BF16);
  const std::vector<double> secs = wall_seconds_sorted(reps, [&](int i) {
    kern.fn(GroupedMatmulArgs{x, offsets, &w[static_cast<size_t>(i % sets)], o, 0, MatmulPrecision::Bf16});
  });
  const double flop = 2.0 * tokens * k * in * out;
  std::printf("grouped prefill %lld -> %lld, 512 tokens x 8 of 128: best %.1f ms %.1f GFLOP/s, median %.1f GFLOP/s\n",
              static_cast<long long>(in), static_cast<long long>(out), secs.front() * 1e3, flop / secs.front() * 1e-9,
              flop / secs[secs.size() / 2] * 1e-9);
}

void time_prefill_linear(int64_t rows, int64_t in, int64_t out, int reps) {
  std::mt19937 g(8);
  Tensor x = rand_f32(g, {rows, in});
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.1f, 0.1f);
  Tensor o = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  const LinearArgs args{x, w, Tensor{}, o, MatmulPrecision::Bf16};
  const std::vector<double> secs = wall_seconds_sorted(reps, [&](int) { k.fn(args); });
  const double flop = 2.0 * rows * in * out;
  std::printf("linear prefill %lld x %lld -> %lld: best %.1f ms %.1f GFLOP/s, median %.1f GFLOP/s\n",
              static_cast<long long>(rows), static_cast<long long>(in), static_cast<long long>(out), secs.front() * 1e3,
              flop / secs.front() * 1e-9, flop / secs[secs.size() / 2] * 1e-9);
}

TEST(CpuPerf, DISABLED_Prefill) {
  std::printf("bf16 dot form: %s\n",
              cpu::bf16_dot_supported() ? cpu::bf16_dot_form_name(cpu::bf16_dot_form()) : "none");
  time_prefill_grouped(2048, 768, 3, 9);
  time_prefill_grouped(2048, 768, 1, 9);
  time_prefill_grouped(768, 2048, 3, 9);
  time_prefill_linear(512, 2048, 4096, 9);
  time_prefill_linear(512, 4096, 2048, 9);
  time_prefill_linear(512, 2560, 19456, 5);  // the 4B model's gate_up and down (Note [AMX panel gemm])
  time_prefill_linear(512, 9728, 2560, 5);
}

TEST(CpuPerf, DISABLED_GroupedDecode) {
  // The experts' gate (or up) shape, then the down shape: the same bytes in shorter rows.
  for (int64_t tokens : {1, 8, 32, 512}) stream_grouped(tokens, 20);
  for (int64_t tokens : {1, 8, 32}) stream_grouped(tokens, 20, 768, 2048);
}

// Row counts from batched decode to prefill at bf16 precision on one thread, weights in cache: each
// kernel's compute ceiling by rows as k grows. OPCHAIN_PERF_ROWS=a,b,... picks the row counts.
TEST(CpuPerf, DISABLED_RowCounts) {
  ThreadPool::set_global_threads(1);
  const std::vector<int64_t> counts = row_counts_from_env({4, 8, 16, 32, 48, 64, 96, 128, 512});
  for (int64_t k : {2048, 4096})
    for (int64_t rows : counts) time_linear(rows, k, 768, rows >= 128 ? 10 : 40, MatmulPrecision::Bf16);
  ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(CpuPerf, DISABLED_Linear) {
  ThreadPool::set_global_threads(1);
  time_linear(512, 2048, 768, 5);
  time_linear(32, 2048, 768, 20);
  time_linear(8, 2048, 768, 40);
  time_linear(1, 2048, 4096, 40);
  std::printf("bf16 precision (%s):\n",
              cpu::bf16_dot_supported() ? cpu::bf16_dot_form_name(cpu::bf16_dot_form()) : "rounded, f32 kernels");
  const MatmulPrecision b = MatmulPrecision::Bf16;
  time_linear(512, 2048, 768, 5, b);
  time_linear(32, 2048, 768, 20, b);
  time_linear(8, 2048, 768, 40, b);
  time_linear(3, 2048, 768, 40, b);
  time_linear(1, 2048, 4096, 40, b);
  time_linear(32, 2048, 16384, 3, b);  // a slice of batch-32 decode's lm_head
  ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace opchain::harness

namespace opchain::harness {
namespace {

// The batch-1 matvec against a plain streaming read of as many bytes, taking turns 20 times on all
// threads, so that the ratio of each pair is free of the neighbours' minute-to-minute swings: how
// close the kernel streams to what the memory system gives a read loop (issue #12's 92% target).
double probe_read_seconds(const std::vector<uint64_t>& buf) {
  using V = uint64_t __attribute__((vector_size(32)));
  const V* v = reinterpret_cast<const V*>(buf.data());
  const size_t n = buf.size() / 4;
  ThreadPool& pool = ThreadPool::global();
  const int threads = pool.num_threads();
  std::vector<uint64_t> sinks(static_cast<size_t>(threads));
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pool.parallel_for(threads, [&](int, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const size_t lo = n * static_cast<size_t>(t) / threads, hi = n * static_cast<size_t>(t + 1) / threads;
      V a0{}, a1{}, a2{}, a3{};
      for (size_t i = lo; i + 4 <= hi; i += 4) {
        a0 += v[i];
        a1 += v[i + 1];
        a2 += v[i + 2];
        a3 += v[i + 3];
      }
      const V s = a0 + a1 + a2 + a3;
      sinks[static_cast<size_t>(t)] = s[0] + s[1] + s[2] + s[3];
    }
  });
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec) + 0 * static_cast<double>(sinks[0]);
}

TEST(CpuPerf, DISABLED_StreamVsProbe) {
  std::mt19937 g(7);
  const int64_t in = 2048, out = 151936;  // the Qwen3 lm_head, 622 MB of bf16
  Tensor x = rand_f32(g, {1, in});
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.02f, 0.02f);
  Tensor o = Tensor::empty(DType::F32, {1, out});
  std::vector<uint64_t> buf(static_cast<size_t>(in * out * 2 / 8));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = i;
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  const LinearArgs args{x, w, Tensor{}, o, MatmulPrecision::Bf16};
  k.fn(args);
  std::vector<double> ratios;
  double best_probe = 0, best_kernel = 0;
  const double bytes = 2.0 * in * out;
  for (int rep = 0; rep < 20; ++rep) {
    const double p = probe_read_seconds(buf);
    timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    k.fn(args);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
    ratios.push_back(p / s);
    best_probe = std::max(best_probe, bytes / p * 1e-9);
    best_kernel = std::max(best_kernel, bytes / s * 1e-9);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "lm_head matvec 1 x 2048 x 151936 bf16 vs a read loop of the same bytes: median ratio %.3f [%.3f, %.3f]; best "
      "%.1f vs %.1f GB/s\n",
      ratios[ratios.size() / 2], ratios.front(), ratios.back(), best_kernel, best_probe);
}

}  // namespace
}  // namespace opchain::harness

// Register-only peaks of the two bf16 dot instructions on one thread, the ceiling the matmul figures
// above are a fraction of: vdpbf16ps (32 products, 64 flop, 12 independent accumulators so latency
// hides) and TDPBF16PS (16 x 16 x 32: 16384 flop; four C tiles from two A and two B tiles, as the
// Amx tile's 2 x 2 block).
#if OPCHAIN_CPU_X86
// The Avx2 tier's peak: 12 independent ymm FMA chains, as the packed f32 kernels run on it (Zen 3 issues
// two 256-bit FMAs per cycle).
OPCHAIN_TARGET_BEGIN("avx2,fma")
namespace opchain::harness {
namespace {
float vfmadd_ymm_loop(int64_t iters) {
  __m256 acc[12];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(0.0078125f);
  for (int64_t i = 0; i < iters; ++i) {
    asm("" : "+x"(x), "+x"(y));
#pragma GCC unroll 12
    for (__m256& a : acc) a = _mm256_fmadd_ps(x, y, a);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  return v[0] + v[7];
}
}  // namespace
}  // namespace opchain::harness
OPCHAIN_TARGET_END()

OPCHAIN_TARGET_BEGIN("avx512f,avx512bw,avx512vl,avx512bf16")
namespace opchain::harness {
namespace {
float vdpbf16ps_loop(int64_t iters) {
  __m512 acc[12];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3c00)),
           y = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3c00));
  for (int64_t i = 0; i < iters; ++i) {
    asm("" : "+v"(x), "+v"(y));
#pragma GCC unroll 12
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
// The f32 FMA rate beside it: the FMA form of the bf16 dot (Note [bf16 dot forms]) runs on these.
float vfmadd_loop(int64_t iters) {
  __m512 acc[12];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0.0078125f);
  for (int64_t i = 0; i < iters; ++i) {
    asm("" : "+v"(x), "+v"(y));
#pragma GCC unroll 12
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, y, a);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
}  // namespace
}  // namespace opchain::harness
OPCHAIN_TARGET_END()

OPCHAIN_TARGET_BEGIN("amx-tile,amx-bf16")
namespace opchain::harness {
namespace {
float tdpbf16ps_loop(int64_t iters) {
  cpu::AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  cpu::amx_configure(cfg);
  alignas(64) thread_local uint16_t src[512];  // thread_local: the loop also runs on every pool thread
  alignas(64) thread_local float out[256];
  for (uint16_t& v : src) v = 0x3c00;  // 2^-7: sums stay finite
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  asm volatile("" ::: "memory");
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  return out[0];
}

// The 2 x 2 block's inner step with its operands streamed from `bytes` of memory: four 1 KiB tile loads
// (contiguous tiles, walked in order) and, if `products`, four TDPBF16PS, as amx_gemm.cpp's block<2, 2>
// runs them. Returns seconds for `passes` passes over the buffer.
double tile_stream_seconds(const uint16_t* buf, int64_t bytes, int64_t passes, bool products) {
  cpu::AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  cpu::amx_configure(cfg);
  const int64_t steps = bytes / 4096;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const double t0 = cpu_seconds();
  for (int64_t p = 0; p < passes; ++p)
    for (int64_t i = 0; i < steps; ++i) {
      const uint16_t* a = buf + i * 2048;
      _tile_loadd(4, a, 64);
      _tile_loadd(6, a + 1024, 64);
      if (products) _tile_dpbf16ps(0, 4, 6);
      _tile_loadd(7, a + 1536, 64);
      if (products) _tile_dpbf16ps(1, 4, 7);
      _tile_loadd(5, a + 512, 64);
      if (products) {
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
  const double s = cpu_seconds() - t0;
  alignas(64) static float out[256];
  _tile_stored(0, out, 64);
  return s + 0 * out[0];
}
}  // namespace
// The panel's products (Note [AMX panel gemm]) with the rest taken away: a 2 x 2 block whose A tiles
// (two weight groups of `steps` chunks, 2 x steps KiB) stay in L1 while B streams `groups` activation
// groups of `steps` tiles each (groups x steps KiB, past L1), loads first then the four products. With
// `reload`, the four C tiles come from and go back to a buffer at every block, as between k blocks.
double block_stream_seconds(const uint16_t* a, const uint16_t* b, float* c, int64_t groups, int64_t steps,
                            int64_t passes, bool reload, bool hint) {
  cpu::amx_configure(cpu::amx_full_tiles());
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const double t0 = cpu_seconds();
  for (int64_t p = 0; p < passes; ++p)
    for (int64_t h = 0; h < groups; h += 2) {
      float* ch = c + h * 512;
      if (reload && hint) {
        _tile_stream_loadd(0, ch, 64);
        _tile_stream_loadd(1, ch + 256, 64);
        _tile_stream_loadd(2, ch + 512, 64);
        _tile_stream_loadd(3, ch + 768, 64);
      } else if (reload) {
        _tile_loadd(0, ch, 64);
        _tile_loadd(1, ch + 256, 64);
        _tile_loadd(2, ch + 512, 64);
        _tile_loadd(3, ch + 768, 64);
      }
      const uint16_t* b0 = b + h * steps * 512;
      const uint16_t* b1 = b0 + steps * 512;
      for (int64_t s = 0; s < steps; ++s) {
        if (hint) {
          _tile_stream_loadd(6, b0 + s * 512, 64);
          _tile_stream_loadd(7, b1 + s * 512, 64);
        } else {
          _tile_loadd(6, b0 + s * 512, 64);
          _tile_loadd(7, b1 + s * 512, 64);
        }
        _tile_loadd(4, a + s * 512, 64);
        _tile_loadd(5, a + (steps + s) * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      if (reload) {
        _tile_stored(0, ch, 64);
        _tile_stored(1, ch + 256, 64);
        _tile_stored(2, ch + 512, 64);
        _tile_stored(3, ch + 768, 64);
      }
    }
  const double s = cpu_seconds() - t0;
  alignas(64) static float out[256];
  _tile_stored(0, out, 64);
  return s + 0 * out[0];
}
}  // namespace opchain::harness
OPCHAIN_TARGET_END()

namespace opchain::harness {
namespace {
// The TDPBF16PS register loop on every pool thread at once, GFLOP/s by the wall clock: the ceiling of a
// matmul that runs on all of them (the tile units of busy neighbouring cores may run slower than one).
double tdpbf16ps_all_threads(int64_t iters) {
  ThreadPool& pool = ThreadPool::global();
  const int threads = pool.num_threads();
  std::vector<float> sinks(static_cast<size_t>(threads));
  timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  pool.parallel_for(threads, [&](int, int64_t a0, int64_t a1) {
    for (int64_t i = a0; i < a1; ++i) sinks[static_cast<size_t>(i)] = tdpbf16ps_loop(iters);
  });
  clock_gettime(CLOCK_MONOTONIC, &w1);
  const double ws = (w1.tv_sec - w0.tv_sec) + 1e-9 * (w1.tv_nsec - w0.tv_nsec);
  return 4.0 * 16384 * static_cast<double>(iters) * threads / ws * 1e-9 + 0 * sinks[0];
}

TEST(CpuPerf, DISABLED_Bf16DotPeak) {
  if (!cpu::bf16_dot_supported()) {
    GTEST_SKIP() << "no avx512_bf16";
  }
  for (int rep = 0; rep < 3; ++rep) {
    const int64_t it = 20'000'000;
    double t0 = cpu_seconds();
    const float a = vdpbf16ps_loop(it);
    double s = cpu_seconds() - t0;
    std::printf("vdpbf16ps register loop: %.1f GFLOP/s per core (%g)\n", 12.0 * 64 * it / s * 1e-9, a);
    t0 = cpu_seconds();
    const float f = vfmadd_loop(it);
    s = cpu_seconds() - t0;
    std::printf("vfmadd231ps register loop: %.1f GFLOP/s per core (%g); bf16 dot form by default: %s\n",
                12.0 * 32 * it / s * 1e-9, f, cpu::bf16_dot_form_name(cpu::bf16_dot_form()));
    if (!cpu::amx_supported()) continue;
    const int64_t tit = 1'000'000;
    t0 = cpu_seconds();
    const float b = tdpbf16ps_loop(tit);
    s = cpu_seconds() - t0;
    std::printf(
        "tdpbf16ps register loop: %.1f GFLOP/s per core, %.2f ns per TDPBF16PS; %.1f GFLOP/s on %d threads (%g)\n",
        4.0 * 16384 * tit / s * 1e-9, s * 1e9 / (4.0 * tit), tdpbf16ps_all_threads(tit),
        ThreadPool::global().num_threads(), b);
  }
}
// What the AMX tile can reach where its operands come from: one TDPBF16PS per 1 KiB tile load (the 2 x 2
// block's ratio) over buffers that sit in L1, in L2 and past it, one thread. The register-only peak
// above is the ceiling; the prefill matmuls are a fraction of the in-L2 row at best
// (docs/performance/sapphire-rapids.md, third session).
TEST(CpuPerf, DISABLED_AmxTileLoads) {
  if (!cpu::amx_supported()) {
    GTEST_SKIP() << "no AMX";
  }
  std::vector<uint16_t> storage((size_t{64} << 20) + 64);
  for (size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<uint16_t>(0x3c00 | (i & 0x7f));
  const uint16_t* buf =
      reinterpret_cast<const uint16_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
  for (int64_t kib : {32, 256, 1024, 8192, 65536}) {
    const int64_t bytes = kib * 1024, passes = std::max<int64_t>(1, (int64_t{2} << 30) / bytes);
    tile_stream_seconds(buf, bytes, 1, true);  // warm the caches that can hold it
    const double loads = tile_stream_seconds(buf, bytes, passes, false);
    const double with = tile_stream_seconds(buf, bytes, passes, true);
    const double moved = static_cast<double>(bytes / 4096 * 4096) * passes;
    std::printf("%6lld KiB: tile loads %.1f GB/s; with one TDPBF16PS per load %.0f GFLOP/s\n",
                static_cast<long long>(kib), moved / loads * 1e-9, moved / 1024 * 16384 / with * 1e-9);
  }
}
// What the panel's block of products can reach on one core (block_stream_seconds): B from L2 (64
// groups of 8 or 16 KiB), A from L1, against the register-only peak in the same run; then with the
// C tiles reloaded every block, as the k blocks need; each with plain tile loads of B (and C) and with
// TILELOADDT1, the non-temporal hint the panel uses (Note [AMX panel gemm]).
TEST(CpuPerf, DISABLED_AmxBlockCeilings) {
  if (!cpu::amx_supported()) {
    GTEST_SKIP() << "no AMX";
  }
  std::vector<uint16_t> a_buf, b_buf;
  std::vector<float> c_buf;
  std::mt19937 g(10);
  uint16_t* a = cpu::scratch_aligned(a_buf, 2 * 16 * 512);
  uint16_t* b = cpu::scratch_aligned(b_buf, 64 * 16 * 512);
  float* c = cpu::scratch_aligned(c_buf, 64 * 512);
  for (size_t i = 0; i < 2 * 16 * 512; ++i) a[i] = static_cast<uint16_t>(0x3c00 | (g() & 0x7f));
  for (size_t i = 0; i < 64 * 16 * 512; ++i) b[i] = static_cast<uint16_t>(0x3c00 | (g() & 0x7f));
  std::fill(c, c + 64 * 512, 0.0f);
  for (int rep = 0; rep < 3; ++rep) {
    const double peak_s = cpu_seconds();
    tdpbf16ps_loop(1'000'000);
    const double peak = 4.0 * 16384 * 1'000'000 / (cpu_seconds() - peak_s) * 1e-9;
    std::printf("register peak %.0f GFLOP/s;", peak);
    for (int64_t steps : {8, 16}) {
      const int64_t passes = 4000 / steps;
      const double flop = 2.0 * 16 * 16 * 32 * steps * 64 * 2 * passes;
      for (bool hint : {false, true}) {
        const double plain = flop / block_stream_seconds(a, b, c, 64, steps, passes, false, hint) * 1e-9;
        const double reload = flop / block_stream_seconds(a, b, c, 64, steps, passes, true, hint) * 1e-9;
        std::printf(" %lld steps%s: B from L2 %.0f (%.0f%%), C reloaded per block %.0f (%.0f%%);",
                    static_cast<long long>(steps), hint ? " with the hint" : "", plain, 100 * plain / peak, reload,
                    100 * reload / peak);
      }
    }
    std::printf("\n");
  }
}

// Issue #12's goal 5 on the Amx tier: the dense model's prefill matmuls (Qwen3-4B at 512 tokens, and a
// 4096-token one) through linear on all pool threads, as a share of the TDPBF16PS register peak on the
// same threads measured just before and just after each timed call (this VM's tile rate moves by 2x
// within minutes). Weights in turn from copies totalling >= 512 MiB, so that they come from memory as
// in a model, not from the last-level cache.
TEST(CpuPerf, DISABLED_AmxPrefillShareOfPeak) {
  if (!cpu::amx_supported()) {
    GTEST_SKIP() << "no AMX";
  }
  std::mt19937 g(12);
  const int64_t shapes[][3] = {
      {512, 2560, 19456}, {512, 9728, 2560}, {512, 2560, 4096}, {512, 4096, 2560}, {4096, 2048, 4096}};
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  for (const auto& sh : shapes) {
    const int64_t rows = sh[0], in = sh[1], n = sh[2];
    const int sets = static_cast<int>(std::max<int64_t>(2, (int64_t{512} << 20) / (n * in * 2)));
    Tensor x = rand_f32(g, {rows, in});
    Tensor o = Tensor::empty(DType::F32, {rows, n});
    std::vector<Tensor> w;
    for (int i = 0; i < sets; ++i) w.push_back(rand_tensor(g, DType::BF16, {n, in}, -0.1f, 0.1f));
    k.fn(LinearArgs{x, w[0], Tensor{}, o, MatmulPrecision::Bf16});
    std::vector<double> share, rate, peak;
    for (int r = 0; r < 7; ++r) {
      const double before = tdpbf16ps_all_threads(300'000);
      timespec w0, w1;
      clock_gettime(CLOCK_MONOTONIC, &w0);
      k.fn(LinearArgs{x, w[static_cast<size_t>((r + 1) % sets)], Tensor{}, o, MatmulPrecision::Bf16});
      clock_gettime(CLOCK_MONOTONIC, &w1);
      const double after = tdpbf16ps_all_threads(300'000);
      const double secs = (w1.tv_sec - w0.tv_sec) + 1e-9 * (w1.tv_nsec - w0.tv_nsec);
      rate.push_back(2.0 * rows * in * n / secs * 1e-9);
      peak.push_back(0.5 * (before + after));
      share.push_back(rate.back() / peak.back());
    }
    std::sort(share.begin(), share.end());
    std::sort(rate.begin(), rate.end());
    std::sort(peak.begin(), peak.end());
    std::printf(
        "%lld x %lld -> %lld on %d threads: %.0f GFLOP/s, peak %.0f (medians of 7); %.0f%% of the peak "
        "(median; %.0f%% .. %.0f%%)\n",
        static_cast<long long>(rows), static_cast<long long>(in), static_cast<long long>(n),
        ThreadPool::global().num_threads(), rate[3], peak[3], 100 * share[3], 100 * share.front(), 100 * share.back());
  }
}

// Note [AMX panel gemm] against the bf16 tile on the same shapes, one thread, the tile called as gemm()
// cuts its work (64 rows x up to 1024 weight rows) and the panel path as gemm() hands it out (the panel
// packed once, then 512 x 256 tiles); 9 alternated pairs, the median ratio. Weights in turn from
// copies totalling >= 256 MiB, so that they come from memory as in a model.
TEST(CpuPerf, DISABLED_AmxPanelVsTile) {
  if (!cpu::amx_supported() || !cpu::bf16_dot_supported()) {
    GTEST_SKIP() << "no AMX";
  }
  std::mt19937 g(9);
  const int64_t shapes[][3] = {{4096, 2048, 4096}, {4096, 4096, 2048}, {512, 4096, 2048}};
  for (const auto& sh : shapes) {
    const int64_t rows = sh[0], k = sh[1], n = sh[2];
    const int sets = static_cast<int>(std::max<int64_t>(2, (int64_t{256} << 20) / (n * k * 2)));
    Tensor x = rand_f32(g, {rows, k});
    std::vector<Tensor> w;
    for (int i = 0; i < sets; ++i) w.push_back(rand_tensor(g, DType::BF16, {n, k}, -0.1f, 0.1f));
    std::vector<float> out(static_cast<size_t>(rows * n));
    std::vector<uint16_t> panel_buf;
    uint16_t* panel = cpu::scratch_aligned(panel_buf, static_cast<size_t>(cpu::amx_bf16_panel_elems(rows, k)));
    auto tile = [&](const void* wp) {
      for (int64_t c0 = 0; c0 < n; c0 += 1024)
        for (int64_t r0 = 0; r0 < rows; r0 += 64) {
          cpu::GemmTile t;
          t.x = x.data<float>() + r0 * k;
          t.ldx = k;
          t.w = static_cast<const uint16_t*>(wp) + c0 * k;
          t.ldw = k;
          t.out = out.data() + r0 * n + c0;
          t.ldo = n;
          t.rows = std::min<int64_t>(64, rows - r0);
          t.cols = std::min<int64_t>(1024, n - c0);
          t.k = k;
          cpu::amx_bf16_gemm_tile(t);
        }
    };
    auto panel_path = [&](const void* wp) {
      cpu::amx_bf16_pack_panel(x.data<float>(), k, rows, k, 0, (rows + 15) / 16, panel);
      for (int64_t c0 = 0; c0 < n; c0 += cpu::kAmxPanelCols)
        for (int64_t r0 = 0; r0 < rows; r0 += cpu::kAmxPanelRows) {
          cpu::AmxPanelTile t;
          t.panel = panel;
          t.panel_rows = rows;
          t.row0 = r0;
          t.rows = std::min(cpu::kAmxPanelRows, rows - r0);
          t.w = static_cast<const uint16_t*>(wp) + c0 * k;
          t.ldw = k;
          t.cols = std::min(cpu::kAmxPanelCols, n - c0);
          t.k = k;
          t.out = out.data() + r0 * n + c0;
          t.ldo = n;
          cpu::amx_bf16_gemm_panel(t);
        }
    };
    std::vector<double> ratio, tile_s, panel_s;
    for (int i = 0; i < 10; ++i) {
      const double t0 = cpu_seconds();
      tile(w[static_cast<size_t>(i % sets)].raw());
      const double t1 = cpu_seconds();
      panel_path(w[static_cast<size_t>((i + 1) % sets)].raw());
      const double t2 = cpu_seconds();
      if (i == 0) continue;  // first touches
      tile_s.push_back(t1 - t0);
      panel_s.push_back(t2 - t1);
      ratio.push_back((t1 - t0) / (t2 - t1));
    }
    std::sort(ratio.begin(), ratio.end());
    std::sort(tile_s.begin(), tile_s.end());
    std::sort(panel_s.begin(), panel_s.end());
    const double flop = 2.0 * rows * k * n;
    std::printf(
        "%lld x %lld -> %lld, one thread: tile %.0f, panel %.0f GFLOP/s (medians); panel speed-up %.2fx [%.2f .. "
        "%.2f]\n",
        static_cast<long long>(rows), static_cast<long long>(k), static_cast<long long>(n), flop / tile_s[4] * 1e-9,
        flop / panel_s[4] * 1e-9, ratio[4], ratio.front(), ratio.back());
  }
}
// The f32 FMA peak of the Avx2 tier (every x86 CPU we run on has it): per core on one thread, then on
// every pool thread at once (wall clock), the ceiling the packed f32 kernels are measured against where
// there is no bf16 dot instruction.
TEST(CpuPerf, DISABLED_Avx2FmaPeak) {
  if (!cpu::isa_supported(cpu::Isa::Avx2)) {
    GTEST_SKIP() << "no avx2 + fma";
  }
  const int64_t it = 20'000'000;
  const double flop = 12.0 * 16 * it;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = cpu_seconds();
    const float a = vfmadd_ymm_loop(it);
    const double s = cpu_seconds() - t0;
    ThreadPool& pool = ThreadPool::global();
    const int threads = pool.num_threads();
    std::vector<float> sinks(static_cast<size_t>(threads));
    timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    pool.parallel_for(threads, [&](int, int64_t t0_, int64_t t1_) {
      for (int64_t t = t0_; t < t1_; ++t) sinks[static_cast<size_t>(t)] = vfmadd_ymm_loop(it);
    });
    clock_gettime(CLOCK_MONOTONIC, &w1);
    const double ws = (w1.tv_sec - w0.tv_sec) + 1e-9 * (w1.tv_nsec - w0.tv_nsec);
    std::printf("vfmadd231ps ymm register loop: %.1f GFLOP/s per core, %.1f GFLOP/s on %d threads (%g %g)\n",
                flop / s * 1e-9, flop * threads / ws * 1e-9, threads, a, sinks[0]);
  }
}
// Decode attention over long bf16 paged caches: the Qwen3-30B-A3B layer shape (32 query heads, 4 kv heads,
// head dim 128) and the Qwen3-4B one (32 / 8), one sequence and eight, on one thread and on the whole
// pool. Per call: the wall-clock median, the process CPU time (what a busy neighbour changes least), and
// the multiply-adds and cache bytes covered per wall-clock second.
void time_decode_attention(int64_t hq, int64_t hk, int64_t batch, int64_t depth, int threads) {
  std::mt19937 g(3);
  const int64_t d = 128, bs = 16;
  AttnSetup s =
      make_attn(g, std::vector<SeqLens>(static_cast<size_t>(batch), {1, static_cast<int>(depth)}), bs, 0, true);
  Tensor q = rand_f32(g, {batch, hq, d}, -2.0f, 2.0f), out = Tensor::empty(DType::F32, {batch, hq, d});
  Tensor kc = rand_tensor(g, DType::BF16, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f);
  Tensor vc = rand_tensor(g, DType::BF16, {s.num_blocks, bs, hk, d});
  const auto k = resolve_kernel<OpType::PagedDecodeAttention>(builtin_registry(), kCpuVendor, DType::F32);
  ThreadPool::set_global_threads(threads);
  const int reps = static_cast<int>(std::max<int64_t>(5, 40000 / (depth * batch)));
  std::vector<double> secs;
  double cpu = 0;
  for (int i = 0; i <= reps; ++i) {
    timespec a, b;
    const double c0 = cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &a);
    k.fn(PagedDecodeAttentionArgs{q, kc, vc, out, 0.088f, s.meta.get()});
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (i == 0) continue;
    cpu += cpu_seconds() - c0;
    secs.push_back((b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec));
  }
  std::sort(secs.begin(), secs.end());
  const double t = secs[secs.size() / 2];
  std::printf(
      "paged decode attention bf16 cache, hq %lld hk %lld batch %lld depth %5lld, %d thread(s): %7.3f ms "
      "(cpu %7.3f ms), %5.1f GMAC/s, %5.1f GB/s of cache\n",
      static_cast<long long>(hq), static_cast<long long>(hk), static_cast<long long>(batch),
      static_cast<long long>(depth), threads, t * 1e3, cpu / reps * 1e3, 2.0 * batch * hq * depth * d / t * 1e-9,
      2.0 * 2 * batch * hk * depth * d / t * 1e-9);
}

// Prefill attention of one long prompt (causal, f32 q/k/v as the model's prefill passes them): the
// Qwen3-30B-A3B layer shape (32 query heads, 4 kv heads, head dim 128) at 512 to 4096 tokens, on one
// thread and on the whole pool. Multiply-adds counted as the causal mask leaves them (q.k and p.v for
// every visible position), against the vfmadd231ps register loop's peak measured in the same run.
void time_prefill_attention(int64_t tokens, int threads, double fma_peak_per_core,
                            MatmulPrecision prec = MatmulPrecision::F32) {
  std::mt19937 g(4);
  const int64_t hq = 32, hk = 4, d = 128;
  AttnSetup s = make_attn(g, {{static_cast<int>(tokens), static_cast<int>(tokens)}}, 16, 0, false);
  Tensor q = rand_f32(g, {tokens, hq, d}, -2.0f, 2.0f), out = Tensor::empty(DType::F32, {tokens, hq, d});
  Tensor k = rand_f32(g, {tokens, hk, d}, -2.0f, 2.0f), v = rand_f32(g, {tokens, hk, d});
  const auto kern = resolve_kernel<OpType::PrefillAttention>(builtin_registry(), kCpuVendor, DType::F32);
  ThreadPool::set_global_threads(threads);
  const PrefillAttentionArgs args{q, k, v, out, 0.088f, s.meta.get(), prec};
  kern.fn(args);
  const std::vector<double> secs = wall_seconds_sorted(tokens >= 2048 ? 3 : 7, [&](int) { kern.fn(args); });
  const double flop = 2.0 * 2.0 * hq * d * (static_cast<double>(tokens) * (tokens + 1) / 2);
  const double rate = flop / secs.front();
  std::printf(
      "prefill attention %s, %5lld tokens, hq %lld hk %lld d %lld, %d thread(s): best %8.2f ms, %6.1f GFLOP/s, "
      "%4.1f%% of the FMA peak\n",
      prec == MatmulPrecision::F32 ? "f32 " : "bf16", static_cast<long long>(tokens), static_cast<long long>(hq),
      static_cast<long long>(hk), static_cast<long long>(d), threads, secs.front() * 1e3, rate * 1e-9,
      100.0 * rate / (fma_peak_per_core * threads));
}

// The widest FMA the attention kernels run here, per core, printed (OPCHAIN_CPU_ISA=avx2 on an AVX-512
// machine makes the zmm figure the wrong ceiling: read it against the Avx2FmaPeak probe then).
double attention_fma_peak() {
  const int64_t it = 20'000'000;
  const double t0 = cpu_seconds();
  const bool zmm = __builtin_cpu_supports("avx512f");
  const float f = zmm ? vfmadd_loop(it) : vfmadd_ymm_loop(it);
  const double peak = (zmm ? 12.0 * 32 : 12.0 * 16) * it / (cpu_seconds() - t0);
  std::printf("vfmadd231ps %s register loop: %.1f GFLOP/s per core (%g)\n", zmm ? "zmm" : "ymm", peak * 1e-9, f);
  return peak;
}

TEST(CpuPerf, DISABLED_PrefillAttention) {
  const double peak = attention_fma_peak();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int64_t tokens : {512, 2048, 4096}) time_prefill_attention(tokens, 1, peak);
  for (int64_t tokens : {512, 2048, 4096}) time_prefill_attention(tokens, cores, peak);
  // At bf16 precision on Isa::Amx the products run on the tiles (Note [AMX attention]); elsewhere these
  // repeat the f32 loops. The FMA peak is then only a yardstick.
  for (int64_t tokens : {512, 4096}) time_prefill_attention(tokens, cores, peak, MatmulPrecision::Bf16);
  ThreadPool::set_global_threads(cores);
}

// The bf16 rows above alone, against the FMA peak as a yardstick (on Avx512Bf16 in the Vdpbf16ps form:
// Note [bf16 dot attention]; its products run at twice the FMA's flops).
TEST(CpuPerf, DISABLED_PrefillAttentionBf16) {
  const double peak = attention_fma_peak();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int64_t tokens : {512, 2048, 4096}) time_prefill_attention(tokens, cores, peak, MatmulPrecision::Bf16);
  ThreadPool::set_global_threads(cores);
}

TEST(CpuPerf, DISABLED_PagedDecodeAttentionDepth) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int threads : {1, cores}) {
    for (int64_t depth : {1024, 4096, 8192, 16384}) time_decode_attention(32, 4, 1, depth, threads);
    time_decode_attention(32, 4, 8, 8192, threads);
    time_decode_attention(32, 8, 1, 8192, threads);
    time_decode_attention(32, 8, 8, 4096, threads);
    if (threads == cores) break;
  }
}
// The Avx512Bf16 tier's bf16 tile in the process's dot form (OPCHAIN_CPU_BF16_DOT=fma|vdpbf16ps) alone, called over and
// over on the same rows and weights (in L1 or L2), one thread: what the tile reaches with no memory stream and no
// threading, against the stand-alone copy of its 8 x 3 loop (docs/performance/sapphire-rapids.md, twelfth session).
// Tiles of 12 rows or more take the pair-order packed kernel (Note [bf16 pair order]), fewer the 8 x 3 blocks.
// OPCHAIN_PERF_SHAPES=rows,k,cols;... picks the shapes.
TEST(CpuPerf, DISABLED_Bf16TileOnHotData) {
  if (!cpu::bf16_dot_supported()) GTEST_SKIP() << "no avx512_bf16";
  std::mt19937 g(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::array<int64_t, 3>> shapes = {{32, 1024, 96}, {32, 2048, 96}, {8, 1024, 96}, {32, 1024, 3}};
  if (const char* e = std::getenv("OPCHAIN_PERF_SHAPES")) {
    shapes.clear();
    long long a, b, c;
    int n = 0;
    while (std::sscanf(e, "%lld,%lld,%lld%n", &a, &b, &c, &n) == 3) {
      shapes.push_back({a, b, c});
      e += n;
      if (*e == ';')
        ++e;
      else
        break;
    }
  }
  for (const auto& [rows, k, cols] : shapes) {
    std::vector<float> x(static_cast<size_t>(rows * k)), o(static_cast<size_t>(rows * cols));
    std::vector<uint16_t> w(static_cast<size_t>(cols * k));
    for (float& v : x) v = nd(g);
    for (uint16_t& v : w) v = f32_to_bf16(0.05f * nd(g));
    const cpu::GemmTile t{x.data(), k, w.data(), k, o.data(), cols, rows, cols, k};
    const cpu::GemmTileFn tile = cpu::avx512_bf16_gemm_tile(cpu::bf16_dot_form());
    const double flop = 2.0 * static_cast<double>(rows * cols * k);
    const int64_t calls = static_cast<int64_t>(2e9 / flop) + 1;
    for (int rep = 0; rep < 3; ++rep) {
      const double t0 = cpu_seconds();
      for (int64_t i = 0; i < calls; ++i) tile(t);
      const double s = cpu_seconds() - t0;
      std::printf("%s-form tile %lld rows x k %lld x %lld weight rows, hot: %.1f GFLOP/s\n",
                  cpu::bf16_dot_form_name(cpu::bf16_dot_form()), static_cast<long long>(rows),
                  static_cast<long long>(k), static_cast<long long>(cols),
                  flop * static_cast<double>(calls) / s * 1e-9);
    }
  }
}
}  // namespace
}  // namespace opchain::harness
#endif  // OPCHAIN_CPU_X86
