// MatmulPrecision::Bf16 on the cpu vendor (Note [Matmul precision], Note [bf16 dot]): matmuls with bf16
// weights round activations to bf16 and use vdpbf16ps (or, on other SIMD paths, the f32 kernels on the
// rounded values). Checked against the reference vendor at the same precision within the op tolerance,
// for batch invariance and thread-count determinism bit for bit, and on the golden models against
// ref_logits_bf16.npy (the logits of a bf16 run) with the same argmax everywhere.
#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "io/npy.h"
#include "test_paths.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/quant_simd.h"
#include "vendors/cpu/simd.h"
#include "vendors/cpu_paths.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

using test::max_abs_diff;
using test::read_ids;

using RestoreCpu = CpuPathGuard;

const Registry& reg() { return builtin_registry(); }

template <OpType Op>
Kernel<Op> kernel(const char* vendor, DType t) {
  return resolve_kernel<Op>(reg(), vendor, t);
}

float max_rel_diff(const Tensor& a, const Tensor& b) {
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::fabs(x - y) / (1.0f + std::fabs(y)));
  }
  return worst;
}

constexpr MatmulPrecision kBf16 = MatmulPrecision::Bf16;

TEST(CpuBf16Dot, PrecisionIsPartOfTheArgsNotAProcessSwitch) {
  std::mt19937 g(5);
  Tensor x = rand_f32(g, {3, 256});
  Tensor w = rand_tensor(g, DType::BF16, {16, 256}, -0.1f, 0.1f);
  Tensor a = Tensor::empty(DType::F32, {3, 16}), b = Tensor::empty(DType::F32, {3, 16}),
         c = Tensor::empty(DType::F32, {3, 16});
  const auto k = kernel<OpType::Linear>(kCpuVendor, DType::BF16);
  k.fn(LinearArgs{x, w, Tensor{}, a});
  k.fn(LinearArgs{x, w, Tensor{}, b, kBf16});
  k.fn(LinearArgs{x, w, Tensor{}, c});
  EXPECT_NE(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "bf16 activations changed nothing";
  EXPECT_EQ(std::memcmp(a.raw(), c.raw(), a.nbytes()), 0) << "a bf16 call leaked into the next f32 call";
  // f32 weights ignore the precision.
  Tensor w32 = rand_tensor(g, DType::F32, {16, 256}, -0.1f, 0.1f);
  k.fn(LinearArgs{x, w32, Tensor{}, a});
  resolve_kernel<OpType::Linear>(reg(), kCpuVendor, DType::F32).fn(LinearArgs{x, w32, Tensor{}, b, kBf16});
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

TEST(CpuBf16Dot, LinearMatchesBf16ReferenceBatchInvariantAndDeterministic) {
  RestoreCpu restore;
  std::mt19937 g(3);
  // The paths (cpu_paths.h): the bf16 dot kernel in each form (avx512bf16), the AMX tile,
  // and the fallback that rounds the activations and runs the f32 kernels (every other path).
  for (const CpuPath& path : cpu_paths()) {
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    // K: partial vector (257), exact multiple (512), long (2048), two of the FMA form's 4096-wide k
    // chunks (8192), two chunks the second of which ends in a partial vector (5300); rows cross the 8-row
    // register block.
    for (int64_t in : {257, 512, 2048, 8192, 5300}) {
      const int64_t rows = 37, out_f = 200;
      Tensor x = rand_f32(g, {rows, in});
      Tensor w = rand_tensor(g, DType::BF16, {out_f, in}, -0.1f, 0.1f), b = rand_tensor(g, DType::BF16, {out_f});
      Tensor ref = Tensor::empty(DType::F32, {rows, out_f}), ref32 = Tensor::empty(DType::F32, {rows, out_f});
      Tensor full = Tensor::empty(DType::F32, {rows, out_f});
      kernel<OpType::Linear>("reference", DType::BF16).fn(LinearArgs{x, w, b, ref, kBf16});
      kernel<OpType::Linear>("reference", DType::BF16).fn(LinearArgs{x, w, b, ref32});
      const auto k = kernel<OpType::Linear>(kCpuVendor, DType::BF16);
      k.fn(LinearArgs{x, w, b, full, kBf16});
      EXPECT_LE(max_rel_diff(full, ref), 1e-4f) << "k=" << in;  // the op table's linear tolerance
      EXPECT_GT(max_rel_diff(full, ref32), 1e-4f) << "k=" << in << ": the activations were not rounded";
      for (int64_t r : {0, 1, 17, 36}) {
        // The few-row kernels, and 8 rows (the FMA form's narrower k chunks for few rows), against the
        // whole call's 8-row blocks.
        for (int64_t n : {1, 2, 3, 4, 8}) {
          if (r + n > rows) continue;
          Tensor part = Tensor::empty(DType::F32, {n, out_f});
          k.fn(LinearArgs{x.slice_rows(r, r + n), w, b, part, kBf16});
          EXPECT_EQ(std::memcmp(part.raw(), full.slice_rows(r, r + n).raw(), part.nbytes()), 0)
              << "rows " << r << "+" << n;
        }
      }
      for (int threads : {1, 3}) {
        ThreadPool::set_global_threads(threads);
        Tensor again = Tensor::empty(DType::F32, {rows, out_f});
        k.fn(LinearArgs{x, w, b, again, kBf16});
        EXPECT_EQ(std::memcmp(again.raw(), full.raw(), full.nbytes()), 0) << threads << " threads";
      }
      ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    }
  }
}

// Where a path has no bf16 dot instruction, gemm() rounds every problem's rows once per op, in parallel,
// before any tile runs (gemm.cpp). A grouped matmul big enough for the pool's threads to share that
// rounding, with empty experts between the others, against reference and bit for bit at any thread count.
TEST(CpuBf16Dot, GroupedRowsRoundedOnceAcrossThreads) {
  RestoreCpu restore;
  for (const CpuPath& path : cpu_paths()) {
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    std::mt19937 g(23);
    const int64_t in = 1024, out_f = 40;
    const std::vector<int32_t> offsets{0, 300, 300, 301, 301, 620};
    Tensor x = rand_f32(g, {620, in});
    std::vector<Tensor> w;
    for (int e = 0; e < 5; ++e) w.push_back(rand_tensor(g, DType::BF16, {out_f, in}, -0.1f, 0.1f));
    Tensor ref = Tensor::empty(DType::F32, {620, out_f}), first = Tensor::empty(DType::F32, {620, out_f});
    kernel<OpType::GroupedMatmul>("reference", DType::BF16)
        .fn(GroupedMatmulArgs{x, i32_tensor(offsets), &w, ref, 0, kBf16});
    const auto k = kernel<OpType::GroupedMatmul>(kCpuVendor, DType::BF16);
    for (int threads : {1, 2, 3}) {
      ThreadPool::set_global_threads(threads);
      Tensor got = Tensor::empty(DType::F32, {620, out_f});
      k.fn(GroupedMatmulArgs{x, i32_tensor(offsets), &w, got, 0, kBf16});
      EXPECT_LE(max_rel_diff(got, ref), 1e-4f) << threads << " threads";
      if (threads == 1)
        first = got;
      else
        EXPECT_EQ(std::memcmp(got.raw(), first.raw(), got.nbytes()), 0) << threads << " threads";
    }
  }
}

// Note [bf16 dot forms]: on Intel the FMA form computes exactly what vdpbf16ps does (the odd product,
// then the even one, each rounded once), so the Avx512Bf16 tier's bits do not depend on the form there,
// and the default takes the faster one. Inputs stay clear of subnormals, which vdpbf16ps flushes.
TEST(CpuBf16Dot, FmaFormGivesVdpbf16psBitsOnIntel) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool intel = __builtin_cpu_is("intel");
#else
  const bool intel = false;
#endif
  if (!cpu::bf16_dot_supported() || !intel)
    GTEST_SKIP() << "the claim is about Intel's vdpbf16ps: this CPU is not an Intel one with avx512_bf16";
  if (std::getenv("OPCHAIN_CPU_BF16_DOT") == nullptr) {
    EXPECT_EQ(cpu::bf16_dot_form(), cpu::Bf16DotForm::FmaPairs);
  }
  std::mt19937 g(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t k : {32, 257, 1300, 2048})
    for (int64_t rows : {1, 2, 3, 4, 8, 37}) {
      const int64_t cols = 100;
      std::vector<float> x(static_cast<size_t>(rows * k)), a(static_cast<size_t>(rows * cols)), b(a.size());
      std::vector<uint16_t> w(static_cast<size_t>(cols * k));
      for (float& v : x) v = nd(g);
      for (uint16_t& v : w) v = f32_to_bf16(0.05f * nd(g));
      cpu::GemmTile t{x.data(), k, w.data(), k, a.data(), cols, rows, cols, k};
      cpu::avx512_bf16_gemm_tile(cpu::Bf16DotForm::Vdpbf16ps)(t);
      t.out = b.data();
      cpu::avx512_bf16_gemm_tile(cpu::Bf16DotForm::FmaPairs)(t);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << rows << " rows, k " << k;
    }
}

// Note [bf16 pair order]: the FMA form's tiles of many rows run the packed f32 kernel in the form's
// order, rounding the activations in integer lanes as they pack them; the few-row tiles round with
// vcvtne2ps2bf16 and run the form's own blocks. Each row of a many-row tile against the same row alone,
// bit for bit, with the rounding's corner cases among the activations (denormals read as zero, ties to
// even, a value that rounds up to infinity, NaN) and k ending in a partial step, a partial vector, or
// across the packed kernel's k blocks. On any CPU with AVX512_BF16: the form runs wherever the tier does.
TEST(CpuBf16Dot, FmaFormManyRowTileGivesItsFewRowBits) {
  if (!cpu::bf16_dot_supported()) GTEST_SKIP() << "no avx512_bf16";
  std::mt19937 g(29);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float specials[] = {1e-40f,      -1e-40f,  1.17e-38f,  -0.0f,      1.00390625f,
                            1.01171875f, 2.5e-39f, 1.0000001f, -1.0078125f};
  const cpu::GemmTileFn tile = cpu::avx512_bf16_gemm_tile(cpu::Bf16DotForm::FmaPairs);
  for (int64_t k : {32, 40, 257, 1024, 2100})
    for (int64_t rows : {16, 37}) {
      const int64_t cols = 23;
      std::vector<float> x(static_cast<size_t>(rows * k)), all(static_cast<size_t>(rows * cols)), one(cols);
      std::vector<uint16_t> w(static_cast<size_t>(cols * k));
      for (float& v : x) v = nd(g);
      for (size_t i = 0; i < x.size(); i += 5) x[i] = specials[(i / 5) % std::size(specials)];
      x[static_cast<size_t>(k + 1)] = 3.4e38f;  // rounds up to infinity
      // NaNs whose rounding bias would carry into the exponent or the quiet bit
      x[static_cast<size_t>(2 * k + 3)] = std::bit_cast<float>(0x7f800001u);
      x[static_cast<size_t>(4 * k + 2)] = std::bit_cast<float>(0xffbfffffu);
      std::fill(x.begin() + 3 * k, x.begin() + 4 * k, 3e-39f);  // row 3 all denormal: zero once rounded
      for (uint16_t& v : w) v = f32_to_bf16(0.05f * nd(g));
      tile(cpu::GemmTile{x.data(), k, w.data(), k, all.data(), cols, rows, cols, k});
      for (int64_t r = 0; r < rows; ++r) {
        tile(cpu::GemmTile{x.data() + r * k, k, w.data(), k, one.data(), cols, 1, cols, k});
        EXPECT_EQ(std::memcmp(one.data(), all.data() + r * cols, one.size() * sizeof(float)), 0)
            << "row " << r << " of " << rows << ", k " << k;
      }
    }
}

// The int4 tile (quant_simd.h) in its FMA form gives the bits of its vdpbf16ps form on Intel too: the
// decode tiles (1-2 rows, unpacked from the codes) and the panel tiles (more rows), groups of 64 (the
// narrow chunk) and 128 (the wide one), symmetric and asymmetric; one row alone and in a batch.
TEST(CpuBf16Dot, Int4FmaFormGivesVdpbf16psBitsOnIntel) {
  RestoreCpu restore;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool intel = __builtin_cpu_is("intel");
#else
  const bool intel = false;
#endif
  if (!intel || !cpu::set_active_isa(cpu::Isa::Avx512Bf16))
    GTEST_SKIP() << "the claim is about Intel's vdpbf16ps: this CPU is not an Intel one with avx512_bf16";
  cpu::set_int4_form_by_rows(false);  // the FMA form's few-row tiles too
  std::mt19937 g(23);
  for (int variant : {3, 4})
    for (int64_t in : {256, 1344, 2048})
      for (int64_t rows : {1, 2, 3, 5, 16, 37}) {
        const Weight w = make_quant_weight(g, DType::U8, variant, 100, in);
        const Tensor x = rand_f32(g, {rows, in}, -3.0f, 3.0f);
        const auto k = kernel<OpType::Linear>(kCpuVendor, DType::U8);
        Tensor a = Tensor::empty(DType::F32, {rows, 100}), b = Tensor::empty(DType::F32, {rows, 100});
        cpu::set_bf16_dot_form(cpu::Bf16DotForm::Vdpbf16ps);
        k.fn(LinearArgs{x, w.values, {}, a, MatmulPrecision::Quantized, w.quant.get()});
        cpu::set_bf16_dot_form(cpu::Bf16DotForm::FmaPairs);
        k.fn(LinearArgs{x, w.values, {}, b, MatmulPrecision::Quantized, w.quant.get()});
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0)
            << "variant " << variant << ", in " << in << ", " << rows << " rows";
      }
  cpu::set_int4_form_by_rows(true);
}

// The Avx512 tier's int4 tile is the Avx512Bf16 tier's FMA form built without AVX512_BF16, its
// activations rounded in integer lanes instead of by vcvtne2ps2bf16: on a CPU with both it must give that
// form's bits, on any vendor's CPU, also where the rounding has corner cases: denormal activations (read
// as zero), ties to even, a value that rounds up to infinity, NaN. Both layouts (groups of 64: narrow;
// 128: wide), symmetric and asymmetric, decode and panel tiles.
TEST(CpuBf16Dot, Avx512TierInt4TileGivesTheFmaFormBits) {
  RestoreCpu restore;
  if (!cpu::isa_supported(cpu::Isa::Avx512Bf16) || !cpu::isa_supported(cpu::Isa::Avx512))
    GTEST_SKIP() << "no AVX512_BF16 to compare with";
  cpu::set_int4_form_by_rows(false);
  std::mt19937 g(24);
  const float specials[] = {1e-40f,      -1e-40f,  1.17e-38f,  -0.0f,      1.00390625f,
                            1.01171875f, 2.5e-39f, 1.0000001f, -1.0078125f};
  for (int variant : {3, 4})
    for (int64_t in : {256, 1344, 2048})
      for (int64_t rows : {1, 2, 3, 5, 16, 37}) {
        const Weight w = make_quant_weight(g, DType::U8, variant, 100, in);
        Tensor x = rand_f32(g, {rows, in}, -3.0f, 3.0f);
        float* xv = x.data<float>();
        for (int64_t i = 0; i < rows * in; i += 7) xv[i] = specials[(i / 7) % std::size(specials)];
        if (rows > 1) xv[in + 3] = 3.4e38f;  // rounds up to infinity
        if (rows > 2) xv[2 * in + 1] = std::numeric_limits<float>::quiet_NaN();
        if (rows > 3)  // row 3 all denormal: zero outputs once rounded, else tiny sums that would show
          std::fill(xv + 3 * in, xv + 4 * in, 3e-39f);
        const auto k = kernel<OpType::Linear>(kCpuVendor, DType::U8);
        Tensor a = Tensor::empty(DType::F32, {rows, 100}), b = Tensor::empty(DType::F32, {rows, 100});
        ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Avx512Bf16));
        cpu::set_bf16_dot_form(cpu::Bf16DotForm::FmaPairs);
        k.fn(LinearArgs{x, w.values, {}, a, MatmulPrecision::Quantized, w.quant.get()});
        ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Avx512));
        k.fn(LinearArgs{x, w.values, {}, b, MatmulPrecision::Quantized, w.quant.get()});
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0)
            << "variant " << variant << ", in " << in << ", " << rows << " rows";
      }
  cpu::set_int4_form_by_rows(true);
}

// The Amx tier's opt-in int4 tile (TDPBF16PS on the codes as bf16 16 + q, amx_quant.cpp) against the reference at
// the op's tolerance, and batch invariant: each row alone == the same row among the others, bit for bit.
// Both chunk layouts (groups of 64: narrow; 128 with k a multiple of 128: wide), symmetric (zero 8) and
// asymmetric, the staged tiles (up to 32 rows; 17-32 take two activation groups) and the panel ones (more),
// weight rows in whole and partial groups of 16 and 32.
TEST(CpuBf16Dot, AmxInt4TileMatchesReferenceAndIsBatchInvariant) {
  RestoreCpu restore;
  if (!cpu::isa_supported(cpu::Isa::Amx) || !cpu::set_active_isa(cpu::Isa::Amx)) GTEST_SKIP() << "no AMX";
  struct Restore {
    bool was = cpu::amx_int4_enabled();
    ~Restore() { cpu::set_amx_int4_enabled(was); }
  } restore_int4;
  cpu::set_amx_int4_enabled(true);
  std::mt19937 g(27);
  const auto k = kernel<OpType::Linear>(kCpuVendor, DType::U8);
  const auto ref = kernel<OpType::Linear>("reference", DType::U8);
  int cases = 0;
  for (const auto [in, group] : {std::pair<int64_t, int64_t>{256, 128}, {2048, 128}, {1344, 64}, {1344, 192}})
    for (bool asym : {false, true})
      for (int64_t out : {40, 100}) {
        auto q = std::make_shared<QuantParams>();
        q->scheme = QuantScheme::Int4Group;
        q->in_features = in;
        q->group_size = group;
        q->scales = rand_f32(g, {out, in / group}, 0.01f, 0.02f);
        if (asym) q->zeros = rand_f32(g, {out, in / group}, 6.0f, 9.0f);
        Tensor codes = Tensor::empty(DType::U8, {out, in / 2});
        for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(g());
        const int64_t rows = 70;
        const Tensor x = rand_f32(g, {rows, in}, -3.0f, 3.0f);
        Tensor want = Tensor::empty(DType::F32, {rows, out});
        ref.fn(LinearArgs{x, codes, {}, want, MatmulPrecision::Quantized, q.get()});
        for (int64_t n : {1, 2, 5, 16, 17, 31, 32, 33, 64, 70}) {
          ++cases;
          SCOPED_TRACE("in " + std::to_string(in) + ", group " + std::to_string(group) + (asym ? ", asym" : ", sym") +
                       ", " + std::to_string(out) + " columns, " + std::to_string(n) + " rows");
          Tensor got = Tensor::empty(DType::F32, {n, out});
          k.fn(LinearArgs{x.slice_rows(0, n), codes, {}, got, MatmulPrecision::Quantized, q.get()});
          EXPECT_LE(max_rel_diff(got, want.slice_rows(0, n)), 1e-4f);
          // The row alone against the row in this call (staged tiles of one or two activation groups, or
          // the panel): the last row of each smaller call, five rows of the largest.
          const std::vector<int64_t> check =
              n == rows ? std::vector<int64_t>{0, 16, 31, 45, 69} : std::vector<int64_t>{n - 1};
          if (n > 1)
            for (int64_t r : check) {
              Tensor one = Tensor::empty(DType::F32, {1, out});
              k.fn(LinearArgs{x.slice_rows(r, r + 1), codes, {}, one, MatmulPrecision::Quantized, q.get()});
              EXPECT_EQ(std::memcmp(one.raw(), got.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
            }
        }
      }
  EXPECT_EQ(cases, 160);
}

// An int4 weight whose groups the AVX-512 tiles' 64-channel chunk does not divide (GPTQ with groups of 16
// or 32) runs the AVX2 tile on the AVX-512 tiers (QuantKernels::int4_other), not the generic f32 path:
// the Avx2 tier's bits, for one row and for many.
TEST(CpuBf16Dot, Int4NarrowGroupsTakeTheAvx2TileOnAvx512Tiers) {
  RestoreCpu restore;
  if (!cpu::isa_supported(cpu::Isa::Avx2)) GTEST_SKIP() << "no AVX2";
  std::mt19937 g(25);
  int tiers = 0;
  for (const auto [in, group] : {std::pair<int64_t, int64_t>{1344, 32}, {1360, 16}})
    for (int64_t rows : {1, 3, 16, 37}) {
      auto q = std::make_shared<QuantParams>();
      q->scheme = QuantScheme::Int4Group;
      q->in_features = in;
      q->group_size = group;
      q->scales = rand_f32(g, {40, in / group}, 0.01f, 0.02f);
      q->zeros = rand_f32(g, {40, in / group}, 6.0f, 9.0f);
      Tensor codes = Tensor::empty(DType::U8, {40, in / 2});
      for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(g());
      const Weight w(codes, q);
      const Tensor x = rand_f32(g, {rows, in}, -3.0f, 3.0f);
      const auto k = kernel<OpType::Linear>(kCpuVendor, DType::U8);
      auto run = [&](cpu::Isa isa) {
        EXPECT_TRUE(cpu::set_active_isa(isa));
        Tensor out = Tensor::empty(DType::F32, {rows, 40});
        k.fn(LinearArgs{x, w.values, {}, out, MatmulPrecision::Quantized, w.quant.get()});
        return out;
      };
      const Tensor want = run(cpu::Isa::Avx2);
      for (cpu::Isa isa : {cpu::Isa::Avx512, cpu::Isa::Avx512Bf16, cpu::Isa::Amx}) {
        if (!cpu::isa_supported(isa)) continue;
        ++tiers;
        const Tensor got = run(isa);
        EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0)
            << cpu::isa_name(isa) << ", in " << in << ", group " << group << ", " << rows << " rows";
      }
    }
  if (tiers == 0) GTEST_SKIP() << "no AVX-512 tier on this machine";
}

// An act-order int4 weight, its columns sorted by group at load (QuantParams::input_order), runs the
// tier's SIMD int4 tile on activations gathered into the columns' order: the bits of the same codes
// without the order, multiplied by activations permuted beforehand. The generic path (each tile
// dequantised into an f32 panel) sums in another order and would not give them. Every SIMD tier; groups
// the AVX-512 chunk takes (64, 128) and one it leaves to the AVX2 tile (32); decode and panel rows.
TEST(CpuBf16Dot, SortedInt4ColumnsRunTheTileOnGatheredActivations) {
  RestoreCpu restore;
  std::mt19937 g(26);
  int tiers = 0;
  for (const CpuPath& path : cpu_paths()) {
    if (path.isa == cpu::Isa::Generic) continue;  // no int4 tile: the f32 panel on either side
    ++tiers;
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    for (const auto [in, group] : {std::pair<int64_t, int64_t>{1024, 128}, {1344, 64}, {1344, 32}})
      for (int64_t rows : {1, 3, 16, 37}) {
        auto plain = std::make_shared<QuantParams>();
        plain->scheme = QuantScheme::Int4Group;
        plain->in_features = in;
        plain->group_size = group;
        plain->scales = rand_f32(g, {40, in / group}, 0.01f, 0.02f);
        plain->zeros = rand_f32(g, {40, in / group}, 6.0f, 9.0f);
        auto sorted = std::make_shared<QuantParams>(*plain);
        std::vector<int32_t> order = iota_i32(static_cast<int32_t>(in));
        std::shuffle(order.begin(), order.end(), g);
        sorted->input_order = Tensor::empty(DType::I32, {in});
        std::copy(order.begin(), order.end(), sorted->input_order.data<int32_t>());
        Tensor codes = Tensor::empty(DType::U8, {40, in / 2});
        for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(g());
        const Tensor x = rand_f32(g, {rows, in}, -3.0f, 3.0f);
        Tensor gathered = Tensor::empty(DType::F32, {rows, in});
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < in; ++j)
            gathered.data<float>()[r * in + j] = x.data<float>()[r * in + order[static_cast<size_t>(j)]];
        const auto k = kernel<OpType::Linear>(kCpuVendor, DType::U8);
        Tensor want = Tensor::empty(DType::F32, {rows, 40}), got = Tensor::empty(DType::F32, {rows, 40});
        k.fn(LinearArgs{gathered, codes, {}, want, MatmulPrecision::Quantized, plain.get()});
        k.fn(LinearArgs{x, codes, {}, got, MatmulPrecision::Quantized, sorted.get()});
        EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0)
            << "in " << in << ", group " << group << ", " << rows << " rows";
      }
  }
  if (tiers == 0) GTEST_SKIP() << "no SIMD tier on this machine";
}

TEST(CpuBf16Dot, FusedMoeMatchesBf16ReferenceAndBatchInvariant) {
  RestoreCpu restore;
  std::mt19937 g(11);
  const int64_t n = 37;
  Tensor hidden = rand_f32(g, {n, 64}, -2.0f, 2.0f), ids, weights;
  make_routing(g, n, 2, iota_i32(8), ids, weights);
  auto experts = make_experts(g, DType::BF16, 8, 64, 48);
  auto run = [&](const char* vendor, int64_t r0, int64_t r1, MatmulPrecision p) {
    Tensor out = Tensor::empty(DType::F32, {r1 - r0, 64});
    MoeMetadata meta;
    meta.num_tokens = r1 - r0;
    kernel<OpType::FusedMoe>(vendor, DType::BF16)
        .fn(FusedMoeArgs{hidden.slice_rows(r0, r1), experts.get(), weights.slice_rows(r0, r1), ids.slice_rows(r0, r1),
                         out, &meta, p});
    return out;
  };
  const Tensor ref = run("reference", 0, n, kBf16), ref32 = run("reference", 0, n, MatmulPrecision::F32);
  for (const CpuPath& path : cpu_paths()) {
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    const Tensor full = run(kCpuVendor, 0, n, kBf16);
    EXPECT_LE(max_rel_diff(full, ref), 1e-4f);
    EXPECT_GT(max_rel_diff(full, ref32), 1e-4f);
    for (int64_t r : {0, 1, 17, 36}) {
      const Tensor one = run(kCpuVendor, r, r + 1, kBf16);
      EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
    }
  }
}

TEST(CpuBf16Dot, AutoPrecisionFollowsTheCheckpoint) {
  EXPECT_EQ(resolve_precision(PrecisionChoice::Auto, DType::BF16), MatmulPrecision::Bf16);
  EXPECT_EQ(resolve_precision(PrecisionChoice::Auto, DType::F32), MatmulPrecision::F32);
  EXPECT_EQ(resolve_precision(PrecisionChoice::Auto, DType::F16), MatmulPrecision::F32);
  EXPECT_EQ(resolve_precision(PrecisionChoice::F32, DType::BF16), MatmulPrecision::F32);
  EXPECT_EQ(resolve_precision(PrecisionChoice::Bf16, DType::F32), MatmulPrecision::Bf16);
  EXPECT_EQ(parse_precision_choice("auto"), PrecisionChoice::Auto);
  EXPECT_FALSE(parse_precision_choice("fp8").has_value());
  LoadedModel m = load_model(test::model_dir("tiny-qwen3-moe"), kCpuVendor, {}, PrecisionChoice::Auto);
  EXPECT_EQ(m.device.matmul_precision, MatmulPrecision::Bf16);  // a bf16 checkpoint
  EXPECT_EQ(load_model(test::model_dir("tiny-qwen3-moe"), kCpuVendor).device.matmul_precision, MatmulPrecision::F32);
}

// Prefill of ids.txt at bf16 precision, on both vendors, against ref_logits_bf16.npy (a transformers
// bf16 run): within a bf16-sized bound and the same argmax at every position.
TEST(CpuBf16Dot, GoldenModelsMatchBf16ReferenceLogits) {
  for (const char* vendor : {kCpuVendor, "reference"})
    for (const char* name : {"tiny-qwen3-moe", "tiny-qwen3-dense", "tiny-llama", "tiny-qwen2-moe"}) {
      SCOPED_TRACE(std::string(vendor) + " " + name);
      const std::string dir = test::model_dir(name);
      const auto ids = read_ids(dir + "/ids.txt");
      ASSERT_FALSE(ids.empty());
      const NpyArray ref = read_npy_f32(dir + "/ref_logits_bf16.npy");
      LoadedModel m = load_model(dir, vendor, {}, PrecisionChoice::Bf16);
      const int64_t n = static_cast<int64_t>(ids.size());
      KvCache cache(m.config, 1 + (n + 15) / 16, 16);
      std::vector<int32_t> blocks;
      ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
      ModelRunner runner(*m.model, m.device, cache);
      SequenceStep step{ids, 0, blocks, true};
      Tensor logits = runner.forward({&step, 1});
      ASSERT_EQ(logits.size(0), ref.shape[0]);
      ASSERT_EQ(logits.size(1), ref.shape[1]);
      const int64_t vocab = logits.size(1);
      float worst = 0;
      for (int64_t t = 0; t < logits.size(0); ++t) {
        const float* got = logits.data<float>() + t * vocab;
        const float* want = ref.data.data() + t * vocab;
        int64_t a = 0, b = 0;
        for (int64_t v = 0; v < vocab; ++v) {
          worst = std::max(worst, std::fabs(got[v] - want[v]));
          if (got[v] > got[a]) a = v;
          if (want[v] > want[b]) b = v;
        }
        EXPECT_EQ(a, b) << "argmax at position " << t;
      }
      // How far a bf16-activation run is from the f32 one: rounding at other points (transformers rounds
      // every activation, this mode only matmul inputs) moves logits by that much again at most.
      const NpyArray ref32 = read_npy_f32(dir + "/ref_logits.npy");
      float gap = 0;
      for (size_t i = 0; i < ref.data.size(); ++i) gap = std::max(gap, std::fabs(ref.data[i] - ref32.data[i]));
      std::printf("[bf16 precision] %s %s: max |logit - ref_bf16| = %g; max |ref_f32 - ref_bf16| = %g\n", vendor, name,
                  worst, gap);
      EXPECT_LE(worst, 2.0f * gap);
    }
}

// The same goldens with the second half of ids.txt decoded token by token, so that attention reads the
// first half's keys and values back from the cache, which at bf16 precision is bf16 (Note [KV cache
// dtype]): the same argmax as the transformers bf16 run at every position, within the same bound.
// The hybrid models' bf16 runs do not follow transformers' (a routing flip changes every later state:
// tests/models/hybrid_model_test.cpp, HybridBf16); there the bf16 cache is compared with an f32 one
// under the same run, with the same argmax wherever the top token leads by 0.1, within 0.15: the
// prompt's attention reads the bf16 cache too, which moves reference's tiny-qwen3_5 logits by up to
// 0.11 (position 2, where transformers' own bf16 run is 0.23 from its f32 one).
std::vector<float> decode_second_half(const std::string& dir, const std::string& vendor,
                                      const std::vector<int32_t>& ids, DType kv_dtype) {
  LoadedModel m = load_model(dir, vendor, {}, PrecisionChoice::Bf16);
  const int64_t n = static_cast<int64_t>(ids.size()), half = n / 2;
  KvCache cache(m.config, 1 + (n + 3) / 4, 4, 1, kv_dtype);
  for (const LayerKvCache& l : cache.layers())
    if (!l.k.is_null()) EXPECT_EQ(l.k.dtype(), kv_dtype);
  std::vector<int32_t> blocks;
  EXPECT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
  ModelRunner runner(*m.model, m.device, cache);
  SequenceStep prefill{std::span<const int32_t>(ids.data(), static_cast<size_t>(half)), 0, blocks, true, 0};
  Tensor first = runner.forward({&prefill, 1});
  std::vector<float> got(first.data<float>(), first.data<float>() + first.numel());
  for (int64_t t = half; t < n; ++t) {
    SequenceStep step{std::span<const int32_t>(ids.data() + t, 1), t, blocks, true, 0};
    Tensor one = runner.forward({&step, 1});
    got.insert(got.end(), one.data<float>(), one.data<float>() + one.numel());
  }
  return got;
}

TEST(CpuBf16Dot, GoldenModelsDecodeFromBf16KvCache) {
  EXPECT_EQ(kv_cache_dtype(MatmulPrecision::Bf16), DType::BF16);
  EXPECT_EQ(kv_cache_dtype(MatmulPrecision::Quantized), DType::BF16);
  EXPECT_EQ(kv_cache_dtype(MatmulPrecision::F32), DType::F32);
  for (const char* vendor : {kCpuVendor, "reference"})
    for (const char* name : {"tiny-qwen3-moe", "tiny-qwen3-dense", "tiny-llama", "tiny-qwen2-moe", "tiny-qwen3-next",
                             "tiny-qwen3_5", "tiny-qwen3_5-moe"}) {
      SCOPED_TRACE(std::string(vendor) + " " + name);
      const std::string dir = test::model_dir(name);
      const auto ids = read_ids(dir + "/ids.txt");
      ASSERT_GE(ids.size(), 2u);
      const bool hybrid = load_model_config(dir).num_linear_attention_layers() > 0;
      const std::vector<float> got = decode_second_half(dir, vendor, ids, DType::BF16);
      std::vector<float> want;
      float bound = 0.15f;
      if (hybrid) {
        want = decode_second_half(dir, vendor, ids, DType::F32);
      } else {
        const NpyArray ref = read_npy_f32(dir + "/ref_logits_bf16.npy"), ref32 = read_npy_f32(dir + "/ref_logits.npy");
        want = ref.data;
        float gap = 0;
        for (size_t i = 0; i < ref.data.size(); ++i) gap = std::max(gap, std::fabs(ref.data[i] - ref32.data[i]));
        bound = 2.0f * gap;  // as GoldenModelsMatchBf16ReferenceLogits
      }
      ASSERT_EQ(got.size(), want.size());
      const int64_t vocab = static_cast<int64_t>(want.size() / ids.size());
      float worst = 0;
      for (size_t t = 0; t < ids.size(); ++t) {
        const float* g = got.data() + t * vocab;
        const float* w = want.data() + t * vocab;
        int64_t a = 0, b = 0;
        for (int64_t v = 0; v < vocab; ++v) {
          worst = std::max(worst, std::fabs(g[v] - w[v]));
          if (g[v] > g[a]) a = v;
          if (w[v] > w[b]) b = v;
        }
        float second = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v)
          if (v != b) second = std::max(second, w[v]);
        if (!hybrid || w[b] - second >= 0.1f) EXPECT_EQ(a, b) << "argmax at position " << t;
      }
      std::printf("[bf16 KV cache] %s %s: max |logit - %s| = %g (bound %g)\n", vendor, name,
                  hybrid ? "the f32 cache's" : "ref_bf16", worst, bound);
      EXPECT_LE(worst, bound);
    }
}

}  // namespace
}  // namespace opchain::harness
