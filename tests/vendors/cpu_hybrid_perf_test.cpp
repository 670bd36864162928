// Throughput probes of the cpu vendor's kernels at Qwen3.5-35B-A3B's shapes (disabled by default:
// --gtest_also_run_disabled_tests --gtest_filter='CpuPerf.LinearAttention*:CpuPerf.Qwen35Experts').
// Wall clock over the pool's threads; prints ms per call and per-token figures.
#include <time.h>

#include <cstdio>
#include <random>

#include "vendors/cpu/cpu_kernels.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// `seqs` sequences of `len` new tokens each (after `past` cached ones), 16 key / 32 value heads of 128.
void time_delta_rule(int64_t seqs, int64_t len, int64_t past, DeltaRuleForm form, int reps) {
  const int64_t nk = 16, nv = 32, d = 128, width = 2 * nk * d + nv * d;
  std::vector<SeqLens> lens(static_cast<size_t>(seqs), SeqLens{static_cast<int>(len), static_cast<int>(past + len)});
  std::mt19937 g(1);
  AttnSetup s = make_attn(g, lens, 16, 0, len == 1);
  s.meta->state_slots = i32_tensor(iota_i32(static_cast<int32_t>(seqs)));
  Tensor qkv = rand_f32(g, {s.rows, width}, -0.1f, 0.1f), gd = rand_f32(g, {s.rows, nv}, -1.0f, 0.0f);
  Tensor beta = rand_f32(g, {s.rows, nv}, 0.0f, 1.0f), state = rand_f32(g, {seqs, nv, d, d}, -0.1f, 0.1f);
  Tensor out = Tensor::empty(DType::F32, {s.rows, nv, d});
  const auto k = resolve_kernel<OpType::GatedDeltaRule>(builtin_registry(), kCpuVendor, DType::F32);
  const GatedDeltaRuleArgs args{qkv, gd, beta, state, out, nk, 0.088f, form, s.meta.get()};
  k.fn(args);
  const double t0 = now();
  for (int i = 0; i < reps; ++i) k.fn(args);
  const double sec = (now() - t0) / reps;
  std::printf("gated_delta_rule %s, %lld seqs x %lld tokens: %.2f ms, %.2f us per token\n", delta_rule_form_name(form),
              static_cast<long long>(seqs), static_cast<long long>(len), sec * 1e3,
              sec * 1e6 / static_cast<double>(s.rows));
}

void time_conv(int64_t seqs, int64_t len, int reps) {
  const int64_t c = 8192;
  std::vector<SeqLens> lens(static_cast<size_t>(seqs), SeqLens{static_cast<int>(len), static_cast<int>(len + 3)});
  std::mt19937 g(2);
  AttnSetup s = make_attn(g, lens, 16, 0, len == 1);
  s.meta->state_slots = i32_tensor(iota_i32(static_cast<int32_t>(seqs)));
  Tensor x = rand_f32(g, {s.rows, c}), w = rand_tensor(g, DType::BF16, {c, 4}), st = rand_f32(g, {seqs, 3, c});
  Tensor out = Tensor::empty(DType::F32, {s.rows, c});
  const auto k = resolve_kernel<OpType::CausalConv1d>(builtin_registry(), kCpuVendor, DType::BF16);
  const CausalConv1dArgs args{x, w, st, out, s.meta.get()};
  k.fn(args);
  const double t0 = now();
  for (int i = 0; i < reps; ++i) k.fn(args);
  const double sec = (now() - t0) / reps;
  std::printf("causal_conv1d %lld seqs x %lld tokens x %lld channels: %.3f ms\n", static_cast<long long>(seqs),
              static_cast<long long>(len), static_cast<long long>(c), sec * 1e3);
}

TEST(CpuPerf, DISABLED_LinearAttention) {
  time_delta_rule(1, 512, 0, DeltaRuleForm::Chunked, 5);
  time_delta_rule(1, 512, 0, DeltaRuleForm::Recurrent, 2);
  time_delta_rule(1, 1, 128, DeltaRuleForm::Recurrent, 50);
  time_delta_rule(8, 1, 128, DeltaRuleForm::Recurrent, 20);
  time_delta_rule(32, 1, 128, DeltaRuleForm::Recurrent, 10);
  time_conv(1, 512, 10);
  time_conv(1, 1, 200);
  time_conv(32, 1, 100);
}

}  // namespace
}  // namespace opchain::harness

namespace opchain::harness {
namespace {
TEST(CpuPerf, DISABLED_LinearAttentionChunkedPrefill) { time_delta_rule(1, 512, 0, DeltaRuleForm::Chunked, 40); }
}  // namespace
}  // namespace opchain::harness

namespace opchain::harness {
namespace {

// The experts of one Qwen3.5-35B-A3B layer (256 x [2 x 512, 2048] + [2048, 512], 1.6 GB of bf16), their
// gate and up rows adjacent as the fused checkpoint stores them, or apart as per-expert tensors are.
void time_experts(bool adjacent, int64_t tokens, int reps) {
  const int64_t e = 256, inter = 512, h = 2048, k = 8;
  std::mt19937 g(9);
  static Tensor gate_up, down, gates, ups;  // shared by the calls: 1.6 GB is enough once
  if (gate_up.is_null()) {
    gate_up = rand_tensor(g, DType::BF16, {e, 2 * inter, h}, -0.05f, 0.05f);
    down = rand_tensor(g, DType::BF16, {e, h, inter}, -0.05f, 0.05f);
    gates = clone(gate_up.reshape({e * 2, inter * h}).slice_rows(0, e));  // any other memory of the same size
  }
  auto w = std::make_shared<ExpertWeights>();
  for (int64_t i = 0; i < e; ++i) {
    const Tensor gu = gate_up.slice_rows(i, i + 1).reshape({2 * inter, h});
    w->gate.push_back(gu.slice_rows(0, inter));
    w->up.push_back(adjacent ? gu.slice_rows(inter, 2 * inter) : gates.slice_rows(i, i + 1).reshape({inter, h}));
    w->down.push_back(down.slice_rows(i, i + 1).reshape({h, inter}));
  }
  Tensor x = rand_f32(g, {tokens, h}), ids, weights;
  make_routing(g, tokens, k, iota_i32(static_cast<int32_t>(e)), ids, weights);
  Tensor out = Tensor::empty(DType::F32, {tokens, h});
  auto meta = make_moe_meta(tokens, 0);
  const auto kern = resolve_kernel<OpType::FusedMoe>(builtin_registry(), kCpuVendor, DType::BF16);
  const FusedMoeArgs args{x, w.get(), weights, ids, out, meta.get(), MatmulPrecision::Bf16};
  kern.fn(args);
  const double t0 = now();
  for (int i = 0; i < reps; ++i) kern.fn(args);
  const double sec = (now() - t0) / reps;
  std::printf("fused_moe 256 experts, %lld tokens, gate/up %s: %.2f ms\n", static_cast<long long>(tokens),
              adjacent ? "adjacent" : "apart   ", sec * 1e3);
}

TEST(CpuPerf, DISABLED_Qwen35Experts) {
  for (int64_t tokens : {1, 8, 32, 512})
    for (bool adjacent : {false, true, false, true}) time_experts(adjacent, tokens, tokens == 512 ? 3 : 10);
}

}  // namespace
}  // namespace opchain::harness

namespace opchain::harness {
namespace {

// Qwen3.5's lm_head (248320 x 2048 bf16, 1.02 GB) at decode batch sizes, bf16 precision, all threads.
TEST(CpuPerf, DISABLED_Qwen35LmHead) {
  std::mt19937 g(6);
  const int64_t in = 2048, out = 248320;
  Tensor w = rand_tensor(g, DType::BF16, {out, in}, -0.02f, 0.02f);
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  for (int64_t rows : {1, 4, 8, 16, 32}) {
    Tensor x = rand_f32(g, {rows, in}), o = Tensor::empty(DType::F32, {rows, out});
    const LinearArgs args{x, w, Tensor{}, o, MatmulPrecision::Bf16};
    k.fn(args);
    const double t0 = now();
    for (int i = 0; i < 3; ++i) k.fn(args);
    const double s = (now() - t0) / 3;
    std::printf("lm_head %lld x 2048 x 248320 bf16: %.1f ms, %.1f GB/s of weights, %.1f GFLOP/s\n",
                static_cast<long long>(rows), s * 1e3, 2.0 * in * out / s * 1e-9, 2.0 * rows * in * out / s * 1e-9);
  }
}

}  // namespace
}  // namespace opchain::harness
