// Throughput probes of the cpu vendor's quantised matmuls at Qwen3-30B-A3B's shapes (disabled by default:
// --gtest_also_run_disabled_tests --gtest_filter='CpuPerf.Quant*'). Wall clock over the pool's threads;
// prints ms per call and the weight bytes streamed per second.
#include <time.h>

#include <cstdio>
#include <random>

#include "vendors/cpu/cpu_kernels.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

double seconds_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// int4 codes with symmetric groups of `group` (GPTQ's usual form).
Weight int4_weight(std::mt19937& g, int64_t out, int64_t in, int64_t group) {
  auto q = std::make_shared<QuantParams>();
  q->scheme = QuantScheme::Int4Group;
  q->in_features = in;
  q->group_size = group;
  q->scales = rand_f32(g, {out, in / group}, 0.001f, 0.002f);
  Tensor codes = Tensor::empty(DType::U8, {out, in / 2});
  for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(g());
  return Weight(codes, q);
}

// One linear of out x in with weights of `dt` (make_quant_weight's `variant`; -1: int4 group 128),
// `rows` activation rows.
void time_quant_linear(DType dt, int variant, int64_t rows, int64_t out, int64_t in, int reps) {
  std::mt19937 g(3);
  const Weight w = variant < 0 ? int4_weight(g, out, in, 128) : make_quant_weight(g, dt, variant, out, in);
  Tensor x = rand_f32(g, {rows, in}), y = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, dt);
  const LinearArgs args{x, w.values, {}, y, MatmulPrecision::Quantized, w.quant.get()};
  k.fn(args);
  const double t0 = seconds_now();
  for (int i = 0; i < reps; ++i) k.fn(args);
  const double sec = (seconds_now() - t0) / reps;
  std::printf("linear %s (%s) %lld rows x [%lld, %lld]: %.3f ms, %.1f GB/s of weights, %.1f GMAC/s\n", dtype_name(dt).data(),
              w.quant->describe().c_str(), static_cast<long long>(rows), static_cast<long long>(out), static_cast<long long>(in),
              sec * 1e3, static_cast<double>(w.values.nbytes()) / sec / 1e9,
              static_cast<double>(rows * out * in) / sec / 1e9);
}

// The same shape with dense bf16 weights, for comparison.
void time_bf16_linear(int64_t rows, int64_t out, int64_t in, int reps) {
  std::mt19937 g(3);
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.1f, 0.1f);
  Tensor x = rand_f32(g, {rows, in}), y = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  const LinearArgs args{x, w, {}, y, MatmulPrecision::Bf16};
  k.fn(args);
  const double t0 = seconds_now();
  for (int i = 0; i < reps; ++i) k.fn(args);
  const double sec = (seconds_now() - t0) / reps;
  std::printf("linear bf16 %lld rows x [%lld, %lld]: %.3f ms, %.1f GB/s of weights, %.1f GMAC/s\n", static_cast<long long>(rows),
              static_cast<long long>(out), static_cast<long long>(in), sec * 1e3, static_cast<double>(w.nbytes()) / sec / 1e9,
              static_cast<double>(rows * out * in) / sec / 1e9);
}

TEST(CpuPerf, DISABLED_QuantLinearInCache) {  // 8 MB of weights: in the L3 cache, the kernels' compute ceiling
  for (int64_t rows : {1, 8}) {
    time_bf16_linear(rows, 2048, 2048, 500);
    time_quant_linear(DType::U8, -1, rows, 8192, 2048, 500);
    time_quant_linear(DType::I8, 0, rows, 4096, 2048, 500);
  }
}

TEST(CpuPerf, DISABLED_QuantLinear) {
  time_bf16_linear(1, 151936, 2048, 10);
  time_bf16_linear(32, 18992, 2048, 10);
  for (int64_t rows : {1, 8, 32, 512}) {
    const int reps = rows >= 512 ? 2 : 20;
    time_quant_linear(DType::U8, 3, rows, 151936 / (rows >= 32 ? 8 : 1), 2048, reps);  // int4 group 64 asym, the lm_head
    time_quant_linear(DType::U8, -1, rows, 151936 / (rows >= 32 ? 8 : 1), 2048, reps);  // int4 group 128
    time_quant_linear(DType::I8, 0, rows, 151936 / (rows >= 32 ? 8 : 1), 2048, reps);  // int8 channel
  }
}

}  // namespace
}  // namespace opchain::harness
