// Throughput probes of the cpu vendor's quantised matmuls at Qwen3-30B-A3B's shapes (disabled by default:
// --gtest_also_run_disabled_tests --gtest_filter='CpuPerf.Quant*'). Wall clock over the pool's threads;
// prints ms per call and the weight bytes streamed per second.
#include <time.h>

#include <cstdio>
#include <random>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/isa_target.h"
#include "vendors/cpu/quant_gemm.h"
#include "vendors/cpu/quant_simd.h"
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
void time_quant_linear(DType dt, int variant, int64_t rows, int64_t out, int64_t in, int reps,
                       MatmulPrecision precision = MatmulPrecision::Quantized) {
  std::mt19937 g(3);
  const Weight w = variant < 0 ? int4_weight(g, out, in, 128) : make_quant_weight(g, dt, variant, out, in);
  Tensor x = rand_f32(g, {rows, in}), y = Tensor::empty(DType::F32, {rows, out});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, dt);
  const LinearArgs args{x, w.values, {}, y, precision, w.quant.get()};
  k.fn(args);
  const double t0 = seconds_now();
  for (int i = 0; i < reps; ++i) k.fn(args);
  const double sec = (seconds_now() - t0) / reps;
  std::printf("linear %s (%s, %s) %lld rows x [%lld, %lld]: %.3f ms, %.1f GB/s of weights, %.1f GMAC/s\n",
              dtype_name(dt).data(), w.quant->describe().c_str(), std::string(matmul_precision_name(precision)).c_str(),
              static_cast<long long>(rows), static_cast<long long>(out), static_cast<long long>(in), sec * 1e3,
              static_cast<double>(w.values.nbytes()) / sec / 1e9, static_cast<double>(rows * out * in) / sec / 1e9);
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
  std::printf("linear bf16 %lld rows x [%lld, %lld]: %.3f ms, %.1f GB/s of weights, %.1f GMAC/s\n",
              static_cast<long long>(rows), static_cast<long long>(out), static_cast<long long>(in), sec * 1e3,
              static_cast<double>(w.nbytes()) / sec / 1e9, static_cast<double>(rows * out * in) / sec / 1e9);
}

TEST(CpuPerf, DISABLED_QuantLinearInCache) {  // 8 MB of weights: in the L3 cache, the kernels' compute ceiling
  for (int64_t rows : {1, 8}) {
    time_bf16_linear(rows, 2048, 2048, 500);
    time_quant_linear(DType::U8, -1, rows, 8192, 2048, 500);
    time_quant_linear(DType::I8, 0, rows, 4096, 2048, 500);
  }
}

// The int8 (W8A8) linear alone, over the row counts where the tile choice changes (Isa::Amx packs from
// 4 rows): 32 MiB of weights, past the L2.
TEST(CpuPerf, DISABLED_QuantLinearInt8) {
  for (int64_t rows : {1, 2, 3, 4, 8, 32, 512})
    time_quant_linear(DType::I8, 0, rows, 16384, 2048, rows >= 512 ? 3 : 20);
}

// The fp8 block linear alone (Fp8Group activations, blocks of 128), 32 MiB of weights, past the L2: the
// Amx tier's TDPBF16PS tile against the avx512fp8 vdpbf16ps one (OPCHAIN_CPU_ISA=avx512bf16).
// The int4 linear (group 128) at batched decode's row counts, 64 MiB of codes from memory: which rows
// share one pass over the codes (OPCHAIN_CPU_ISA=avx2 for the Avx2 tile).
TEST(CpuPerf, DISABLED_QuantLinearInt4Rows) {
  for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8}) time_quant_linear(DType::U8, -1, rows, 65536, 2048, 8);
}

// The int4 linear (group 128) in the two precisions that run it with SIMD tiles: bf16 activations
// (Quantized) and int8 ones per group (Int8), taking turns, at decode and prefill row counts; 64 MiB of
// codes from memory, and 8 MiB (in the last-level cache: the tiles' compute).
TEST(CpuPerf, DISABLED_QuantLinearInt4Int8) {
  for (int64_t out : {65536, 8192})
    for (int64_t rows : {1, 4, 8, 32, 256})
      for (MatmulPrecision p : {MatmulPrecision::Quantized, MatmulPrecision::Int8})
        time_quant_linear(DType::U8, -1, rows, out, 2048,
                          std::max<int>(2, static_cast<int>(16 * 8192 / out / rows) + 2), p);
}

// The same at one row on a dense model's shapes (Qwen3-4B: gate and up fused, down, q): decode's tiles.
TEST(CpuPerf, DISABLED_QuantLinearInt4Int8Dense) {
  // gate_up, down, q_proj, and the tied vocabulary projection as `quantize --lm-head` writes it
  for (const auto& [out, in] : {std::pair<int64_t, int64_t>{19456, 2560}, {2560, 9728}, {4096, 2560}, {151936, 2560}})
    for (int64_t rows : {1, 2, 8})
      for (MatmulPrecision p : {MatmulPrecision::Quantized, MatmulPrecision::Int8})
        time_quant_linear(DType::U8, -1, rows, out, in, out > 100000 ? 10 : 50, p);
}

TEST(CpuPerf, DISABLED_QuantLinearFp8) {
  for (int64_t rows : {1, 2, 3, 4, 8, 12, 16, 32, 512})
    time_quant_linear(DType::F8E4M3, 4, rows, 16384, 2048, rows >= 512 ? 3 : 20);
}

TEST(CpuPerf, DISABLED_QuantLinear) {
  time_bf16_linear(1, 151936, 2048, 10);
  time_bf16_linear(32, 18992, 2048, 10);
  for (int64_t rows : {1, 8, 32, 512}) {
    const int reps = rows >= 512 ? 2 : 20;
    time_quant_linear(DType::U8, 3, rows, 151936 / (rows >= 32 ? 8 : 1), 2048,
                      reps);  // int4 group 64 asym, the lm_head
    time_quant_linear(DType::U8, -1, rows, 151936 / (rows >= 32 ? 8 : 1), 2048, reps);  // int4 group 128
    time_quant_linear(DType::I8, 0, rows, 151936 / (rows >= 32 ? 8 : 1), 2048, reps);   // int8 channel
  }
}

// Batch-1 decode of a Qwen3-30B-A3B MoE layer's experts, as fused_moe calls quant_gemm: 8 problems of one
// row each (gate [768, 2048], then down [2048, 768], int4 g128), against one problem of the same bytes
// ([6144, 2048]) and the attention projections' shapes, each from enough copies to fill 256 MiB so that
// the weights come from memory. GB/s of codes and scales: every figure
// should match the single large problem's.
TEST(CpuPerf, DISABLED_QuantMoeDecodeExperts) {
  std::mt19937 g(5);
  const int64_t picked = 8;
  struct Shape {
    const char* name;
    int64_t out, in;
  };
  for (const Shape s : {Shape{"gate", 768, 2048}, Shape{"down", 2048, 768}, Shape{"one problem", 6144, 2048},
                        Shape{"k_proj", 512, 2048}, Shape{"q_proj", 4096, 2048}}) {
    const bool moe = s.name[0] == 'g' || s.name[0] == 'd';
    // 256 MiB of copies: the L3's replacement keeps part of a working set only a few times its size.
    const int64_t per_call = moe ? picked : 1, pool = (int64_t{256} << 20) / (s.out * s.in / 2);
    std::vector<Weight> w;
    for (int64_t e = 0; e < pool; ++e) w.push_back(int4_weight(g, s.out, s.in, 128));
    Tensor x = rand_f32(g, {per_call, s.in}), y = Tensor::empty(DType::F32, {per_call, s.out});
    const double bytes =
        static_cast<double>(per_call) * static_cast<double>(w[0].values.nbytes() + w[0].quant->scales.nbytes());
    std::vector<cpu::QuantGemmProblem> ps(static_cast<size_t>(per_call));
    auto call = [&](int64_t i) {
      for (int64_t p = 0; p < per_call; ++p) {
        const Weight& we = w[static_cast<size_t>((i * per_call + p) % pool)];
        ps[static_cast<size_t>(p)] = {x.data<float>() + p * s.in,  s.in, 1, &we.values, we.quant.get(), s.out,
                                      y.data<float>() + p * s.out, s.out};
      }
      cpu::quant_gemm(ps.data(), ps.size(), MatmulPrecision::Quantized);
    };
    for (int round = 0; round < 3; ++round) {
      const int reps = 200;
      call(0);
      const double t0 = seconds_now();
      for (int i = 0; i < reps; ++i) call(i + 1);
      const double sec = (seconds_now() - t0) / reps;
      std::printf("moe decode %s: %lld x [%lld, %lld] int4 g128, 1 row each: %.1f us, %.1f GB/s\n", s.name,
                  static_cast<long long>(per_call), static_cast<long long>(s.out), static_cast<long long>(s.in),
                  sec * 1e6, bytes / sec / 1e9);
    }
  }
}

// The int4 tile in each bf16 dot form (Note [bf16 dot forms]) on one thread, taking turns per shape, best
// of five rounds: `rows` activation rows x 64 weight rows (one quant_gemm tile) x k = 2048, int4 g128,
// the panel's unpacking counted; 64 weight rows (64 KiB of codes) stay in L2, so this is the compute.
TEST(CpuPerf, DISABLED_QuantInt4Forms) {
  if (!cpu::set_active_isa(cpu::Isa::Avx512Bf16)) GTEST_SKIP() << "no AVX512_BF16";
  const cpu::Bf16DotForm saved = cpu::bf16_dot_form();
  cpu::set_int4_form_by_rows(false);  // each form at every row count
  const cpu::QuantKernels* qk = cpu::quant_kernels();
  ASSERT_NE(qk, nullptr);
  std::mt19937 g(6);
  const int64_t k = 2048, cols = 64, group = 128, groups = k / group;
  const Weight w = int4_weight(g, cols, k, group);
  for (int64_t rows : {1, 2, 3, 4, 8, 16, 24, 32, 48, 64}) {
    const Tensor x = rand_f32(g, {rows, k});
    std::vector<char> xp_buf;  // aligned as quant_gemm's prepared rows are
    char* xp = cpu::scratch_aligned(xp_buf, static_cast<size_t>(rows * k * qk->int4_x_bytes));
    std::vector<float> sums(static_cast<size_t>(rows * groups)), out(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      qk->int4_prepare(x.data<float>() + r * k, k, group, xp + r * k * qk->int4_x_bytes, sums.data() + r * groups);
    cpu::Int4Tile t;
    t.x = xp;
    t.ldx = k;
    t.codes = w.values.data<uint8_t>();
    t.code_ld = k / 2;
    t.scales = w.quant->scales.data<float>();
    t.x_sums = sums.data();
    t.groups = groups;
    t.group_size = group;
    t.k = k;
    t.out = out.data();
    t.ldo = cols;
    t.rows = rows;
    t.cols = cols;
    const cpu::Bf16DotForm forms[] = {cpu::Bf16DotForm::Vdpbf16ps, cpu::Bf16DotForm::FmaPairs};
    double best[2] = {1e30, 1e30};
    const int reps = static_cast<int>(std::max<int64_t>(20, 2000 / rows));
    for (int round = 0; round < 5; ++round)
      for (int f = 0; f < 2; ++f) {
        cpu::set_bf16_dot_form(forms[f]);
        qk->int4_tile(t);
        const double t0 = seconds_now();
        for (int i = 0; i < reps; ++i) qk->int4_tile(t);
        best[f] = std::min(best[f], (seconds_now() - t0) / reps);
      }
    const double macs = static_cast<double>(rows * cols * k);
    std::printf(
        "int4 tile %lld rows x %lld cols x k %lld g%lld: vdpbf16ps %.1f us (%.1f GMAC/s), fma %.1f us "
        "(%.1f GMAC/s), fma/vdpbf16ps speed %.2f\n",
        static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(k),
        static_cast<long long>(group), best[0] * 1e6, macs / best[0] / 1e9, best[1] * 1e6, macs / best[1] / 1e9,
        best[0] / best[1]);
  }
  cpu::set_bf16_dot_form(saved);
  cpu::set_int4_form_by_rows(true);
}

// The int8 tile variants on one thread, taking turns per shape (the machine is shared, so each shape's
// variants run back to back, three rounds): `rows` activation rows x `cols` weight rows x k = 2048, the
// AMX one with its packing counted. 256 weight rows (512 KiB, in L2): the tiles' compute; 32768
// (64 MiB): a stream from memory, as decode reads the experts.
TEST(CpuPerf, DISABLED_QuantInt8Tiles) {
  struct V {
    const char* name;
    cpu::Isa isa;
    bool vnni;
  };
  std::vector<V> vs;
  if (cpu::isa_supported(cpu::Isa::Avx2)) vs.push_back({"avx2", cpu::Isa::Avx2, false});
  if (cpu::avx_vnni_supported()) vs.push_back({"avxvnni", cpu::Isa::Avx2, true});
  if (cpu::isa_supported(cpu::Isa::Avx512)) vs.push_back({"avx512", cpu::Isa::Avx512, false});
  if (cpu::isa_supported(cpu::Isa::Avx512Bf16)) vs.push_back({"avx512bf16", cpu::Isa::Avx512Bf16, true});
  if (cpu::isa_supported(cpu::Isa::Amx)) vs.push_back({"amx", cpu::Isa::Amx, true});
  const cpu::Isa saved = cpu::active_isa();
  const bool saved_vnni = cpu::avx_vnni_enabled();
  std::mt19937 g(4);
  const int64_t k = 2048;
  for (int64_t cols : {256, 32768}) {
    std::vector<int8_t> w(static_cast<size_t>(cols * k));
    for (int8_t& v : w) v = static_cast<int8_t>(g());
    std::vector<float> ws(static_cast<size_t>(cols), 1e-3f);
    for (int64_t rows : {1, 2, 3, 4, 8, 16, 32, 64}) {
      std::vector<int8_t> x(static_cast<size_t>(rows * k)), xp(static_cast<size_t>((rows + 15) / 16 * 16 * k));
      for (int8_t& v : x) v = static_cast<int8_t>(randint(g, -127, 127));
      std::vector<int32_t> sums(static_cast<size_t>(rows), 0);
      std::vector<float> xs(static_cast<size_t>(rows), 1e-2f), out(static_cast<size_t>(rows * cols));
      std::vector<double> best(vs.size(), 1e30);
      const int reps = cols > 256 ? 3 : 40;
      for (int round = 0; round < 3; ++round)
        for (size_t vi = 0; vi < vs.size(); ++vi) {
          cpu::set_active_isa(vs[vi].isa);
          cpu::set_avx_vnni_enabled(vs[vi].vnni);
          const cpu::QuantKernels* qk = cpu::quant_kernels();
          auto once = [&] {
            cpu::Int8Tile t{x.data(), k, xs.data(),  sums.data(), w.data(), k,   ws.data(),
                            nullptr,  k, out.data(), cols,        rows,     cols};
            if (qk->int8_pack) {
              for (int64_t b = 0; b < rows; b += 16)
                qk->int8_pack(x.data() + b * k, k, std::min<int64_t>(16, rows - b), xp.data() + b * k);
              t.xp = xp.data();
            }
            qk->int8_tile(t);
          };
          once();
          const double t0 = seconds_now();
          for (int i = 0; i < reps; ++i) once();
          best[vi] = std::min(best[vi], (seconds_now() - t0) / reps);
        }
      std::printf("int8 tile %lld rows x %lld cols x k %lld:", static_cast<long long>(rows),
                  static_cast<long long>(cols), static_cast<long long>(k));
      for (size_t vi = 0; vi < vs.size(); ++vi)
        std::printf("  %s %.3f ms (%.0f GMAC/s, %.1f GB/s)", vs[vi].name, best[vi] * 1e3,
                    static_cast<double>(rows * cols * k) / best[vi] / 1e9,
                    static_cast<double>(cols * k) / best[vi] / 1e9);
      std::printf("\n");
    }
  }
  cpu::set_active_isa(saved);
  cpu::set_avx_vnni_enabled(saved_vnni);
}

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile,amx-int8")
// Four independent 16 x 16 x 64 dot products per iteration on tiles that never leave the registers:
// the AMX int8 unit's own rate, no memory involved.
template <bool kSigned>
double amx_int8_loop(int64_t iters) {
  alignas(64) static int8_t src[16 * 64] = {1};
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const double t0 = seconds_now();
  for (int64_t i = 0; i < iters; ++i) {
    if constexpr (kSigned) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    } else {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
  }
  const double sec = seconds_now() - t0;
  alignas(64) static int32_t sink[16 * 16];
  _tile_stored(0, sink, 64);
  return sec;
}
OPCHAIN_TARGET_END()

TEST(CpuPerf, DISABLED_AmxInt8Peak) {
  if (!cpu::amx_supported()) GTEST_SKIP() << "no AMX";
  cpu::AmxTileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.rows[i] = 16;
    cfg.colsb[i] = 64;
  }
  cpu::amx_configure(cfg);
  const int64_t iters = 2000000;
  for (int round = 0; round < 3; ++round)
    for (bool sign : {false, true}) {
      const double sec = sign ? amx_int8_loop<true>(iters) : amx_int8_loop<false>(iters);
      const double ops = 2.0 * 4 * 16 * 16 * 64 * static_cast<double>(iters);  // a multiply and an add per MAC
      std::printf("%s register-only, one thread: %.0f GOP/s (%.1f ns per instruction)\n", sign ? "TDPBSSD" : "TDPBUSD",
                  ops / sec / 1e9, sec / (4.0 * static_cast<double>(iters)) * 1e9);
    }
}
#endif

}  // namespace
}  // namespace opchain::harness
