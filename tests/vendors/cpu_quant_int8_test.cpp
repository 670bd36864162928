// The cpu vendor's int8 tiles (quant_simd.h) on every variant this machine runs: AVX2 vpmaddubsw,
// AVX2 + AVX-VNNI vpdpbusd (ymm), AVX-512 vpdpbusd and AMX TDPBSSD (with and without the packed
// activations). Their int32 sums are exact, so every variant must give exactly the scalar reference's
// bits: float(sum x w - zero * sum x) * x_scale * w_scale. Shapes cover partial 16-row groups of
// weights and activations, k tails and long k; the op-level cases run the same variants end to end.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/quant_simd.h"
#include "vendors/cpu/simd.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

struct Int8Variant {
  std::string name;
  cpu::Isa isa;
  bool avx_vnni;  // the Avx2 and Avx512 tiers' choice (ignored on the others)
};

std::vector<Int8Variant> int8_variants() {
  std::vector<Int8Variant> out;
  if (cpu::isa_supported(cpu::Isa::Avx2)) {
    out.push_back({"avx2-vpmaddubsw", cpu::Isa::Avx2, false});
    if (cpu::avx_vnni_supported()) out.push_back({"avx2-avxvnni", cpu::Isa::Avx2, true});
  }
  if (cpu::isa_supported(cpu::Isa::Avx512)) out.push_back({"avx512", cpu::Isa::Avx512, false});
  if (cpu::isa_supported(cpu::Isa::Avx512Bf16))
    out.push_back({"avx512bf16", cpu::Isa::Avx512Bf16, cpu::avx_vnni_supported()});
  if (cpu::isa_supported(cpu::Isa::Amx)) out.push_back({"amx", cpu::Isa::Amx, cpu::avx_vnni_supported()});
  return out;
}

// Selects a variant for its scope, restoring the ISA and the AVX-VNNI choice after.
struct VariantScope {
  cpu::Isa saved_isa = cpu::active_isa();
  bool saved_vnni = cpu::avx_vnni_enabled();
  explicit VariantScope(const Int8Variant& v) {
    EXPECT_TRUE(cpu::set_active_isa(v.isa)) << v.name;
    EXPECT_TRUE(cpu::set_avx_vnni_enabled(v.avx_vnni)) << v.name;
  }
  ~VariantScope() {
    cpu::set_active_isa(saved_isa);
    cpu::set_avx_vnni_enabled(saved_vnni);
  }
};

// One tile problem: activation codes in [-127, 127] (quantize_row_int8's range), weight codes over
// all of int8, zero points over all of int8 when asked.
struct TileProblem {
  int64_t rows, cols, k, ldx, ldo;
  std::vector<int8_t> x, w;
  std::vector<int32_t> x_sums;
  std::vector<float> x_scales, w_scales, w_zeros;

  TileProblem(std::mt19937& g, int64_t rows_, int64_t cols_, int64_t k_, bool zeros)
      : rows(rows_), cols(cols_), k(k_), ldx((k_ + 63) / 64 * 64), ldo(cols_ + 3) {
    x.assign(static_cast<size_t>(rows * ldx), 0);
    w.resize(static_cast<size_t>(cols * k));  // exactly the weight: a read past it is a read past the tensor
    for (int64_t r = 0; r < rows; ++r) {
      int32_t s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += x[static_cast<size_t>(r * ldx + i)] = static_cast<int8_t>(randint(g, -127, 127));
      x_sums.push_back(s);
      x_scales.push_back(uniform(g, 1e-3f, 1e-1f));
    }
    for (int8_t& v : w) v = static_cast<int8_t>(randint(g, -128, 127));
    for (int64_t c = 0; c < cols; ++c) {
      w_scales.push_back(uniform(g, 1e-4f, 1e-2f));
      if (zeros) w_zeros.push_back(static_cast<float>(randint(g, -128, 127)));
    }
  }

  std::vector<float> reference() const {
    std::vector<float> out(static_cast<size_t>(rows * ldo), std::numeric_limits<float>::quiet_NaN());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t dot = 0;
        for (int64_t i = 0; i < k; ++i)
          dot += int64_t{x[static_cast<size_t>(r * ldx + i)]} * w[static_cast<size_t>(c * k + i)];
        const int64_t zero = w_zeros.empty() ? 0 : static_cast<int64_t>(w_zeros[static_cast<size_t>(c)]);
        const int64_t total = dot - zero * x_sums[static_cast<size_t>(r)];
        out[static_cast<size_t>(r * ldo + c)] =
            static_cast<float>(total) * x_scales[static_cast<size_t>(r)] * w_scales[static_cast<size_t>(c)];
      }
    return out;
  }

  // Rows [r0, r0 + n) through the active variant's tile; packed: through QuantKernels::int8_pack first
  // (as quant_gemm packs them, in blocks from r0).
  std::vector<float> run(const cpu::QuantKernels& qk, bool packed, int64_t r0, int64_t n) const {
    std::vector<float> out(static_cast<size_t>(n * ldo), std::numeric_limits<float>::quiet_NaN());
    std::vector<int8_t> xp;
    cpu::Int8Tile t;
    if (packed) {
      const int64_t blocks = (n + cpu::kInt8PackRows - 1) / cpu::kInt8PackRows;
      xp.assign(static_cast<size_t>(blocks * cpu::kInt8PackRows * ldx), 0x55);
      for (int64_t b = 0; b < n; b += cpu::kInt8PackRows)
        qk.int8_pack(x.data() + (r0 + b) * ldx, ldx, std::min(cpu::kInt8PackRows, n - b), xp.data() + b * ldx);
      t.xp = xp.data();
    }
    t.x = x.data() + r0 * ldx;
    t.ldx = ldx;
    t.x_scales = x_scales.data() + r0;
    t.x_sums = x_sums.data() + r0;
    t.w = w.data();
    t.ldw = k;
    t.w_scales = w_scales.data();
    t.w_zeros = w_zeros.empty() ? nullptr : w_zeros.data();
    t.k = k;
    t.out = out.data();
    t.ldo = ldo;
    t.rows = n;
    t.cols = cols;
    qk.int8_tile(t);
    return out;
  }
};

// Bit equality with NaN padding (the columns past cols must stay untouched).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string first_difference(const std::vector<float>& want, const std::vector<float>& got, int64_t ldo) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0)
      return "row " + std::to_string(static_cast<int64_t>(i) / ldo) + " col " +
             std::to_string(static_cast<int64_t>(i) % ldo) + ": want " + std::to_string(want[i]) + ", got " +
             std::to_string(got[i]);
  return "sizes differ";
}

void check_shape(std::mt19937& g, const std::vector<Int8Variant>& variants, int64_t rows, int64_t cols, int64_t k,
                 bool zeros) {
  const TileProblem p(g, rows, cols, k, zeros);
  const std::vector<float> want = p.reference();
  for (const Int8Variant& v : variants) {
    VariantScope scope(v);
    const cpu::QuantKernels* qk = cpu::quant_kernels();
    ASSERT_NE(qk, nullptr) << v.name;
    for (bool packed : {false, true}) {
      if (packed && !qk->int8_pack) continue;
      const std::vector<float> got = p.run(*qk, packed, 0, rows);
      ASSERT_TRUE(same_bits(want, got)) << v.name << (packed ? " packed" : "") << " rows " << rows << " cols " << cols
                                        << " k " << k << (zeros ? " zeros" : "") << ": "
                                        << first_difference(want, got, p.ldo);
    }
  }
}

// Int8 weights met by float activations (W8A16: no activation quantisation, or the f32 precision) are
// dequantised per tile into an f32 panel; every tier's vector dequantisation gives dequantize_row's bits
// (one rounding of (code - zero) * scale), over the whole code range, with and without zeros, k tails.
TEST(CpuQuantInt8, WeightOnlyRowsDequantiseAsTheScalarRow) {
  std::mt19937 g(31);
  for (cpu::Isa isa : cpu::kAllIsas) {
    const cpu::SimdKernels* sk = cpu::simd_for(isa);
    if (!sk || !cpu::isa_supported(isa)) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    for (int64_t in : {1, 5, 16, 37, 2051})
      for (bool asym : {false, true}) {
        auto q = std::make_shared<QuantParams>();
        q->scheme = QuantScheme::Int8Channel;
        q->in_features = in;
        q->scales = rand_f32(g, {3, 1}, -0.02f, 0.02f);
        if (asym) {
          q->zeros = Tensor::empty(DType::F32, {3, 1});
          for (int64_t o = 0; o < 3; ++o) q->zeros.data<float>()[o] = static_cast<float>(randint(g, -128, 127));
        }
        Tensor codes = Tensor::empty(DType::I8, {3, in});
        for (int64_t i = 0; i < codes.numel(); ++i)
          codes.data<int8_t>()[i] = static_cast<int8_t>(randint(g, -128, 127));
        codes.data<int8_t>()[0] = -128;
        for (int64_t o = 0; o < 3; ++o) {
          std::vector<float> want(static_cast<size_t>(in)), got(static_cast<size_t>(in));
          dequantize_row(codes, *q, o, want.data());
          sk->dequantize_i8(codes.data<int8_t>() + o * in, asym ? q->zeros.data<float>()[o] : 0.0f,
                            q->scales.data<float>()[o], got.data(), in);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
              << "row " << o << ", in " << in << (asym ? ", zeros" : "");
        }
      }
  }
}

TEST(CpuQuantInt8, EveryTileVariantGivesTheReferenceBits) {
  const std::vector<Int8Variant> variants = int8_variants();
  if (variants.empty()) GTEST_SKIP() << "no SIMD int8 tile on this machine";
  std::mt19937 g(21);
  for (int64_t k : {1, 3, 64, 100, 128, 192})
    for (int64_t rows : {1, 2, 3, 15, 16, 17, 31, 32, 33, 64, 70})
      for (int64_t cols : {1, 15, 16, 17, 33, 100, 300})
        check_shape(g, variants, rows, cols, k, (rows + cols) % 2 == 0);
  for (int64_t k : {2048, 2100, 4096})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 300}, {2, 17}, {17, 64}, {64, 33}, {70, 16}})
      for (bool zeros : {false, true}) check_shape(g, variants, rows, cols, k, zeros);
}

// Row r alone (a one-row tile: vpdpbusd on Amx unless packed) == row r inside a 70-row tile.
TEST(CpuQuantInt8, RowAloneEqualsRowInBatch) {
  const std::vector<Int8Variant> variants = int8_variants();
  if (variants.empty()) GTEST_SKIP() << "no SIMD int8 tile on this machine";
  std::mt19937 g(22);
  const TileProblem p(g, 70, 100, 200, true);
  for (const Int8Variant& v : variants) {
    VariantScope scope(v);
    const cpu::QuantKernels& qk = *cpu::quant_kernels();
    const std::vector<float> full = p.run(qk, qk.int8_pack != nullptr, 0, p.rows);
    for (int64_t r : {0, 1, 15, 16, 17, 69}) {
      const std::vector<float> want(full.begin() + r * p.ldo, full.begin() + (r + 1) * p.ldo);
      for (bool packed : {false, true}) {
        if (packed && !qk.int8_pack) continue;
        EXPECT_TRUE(same_bits(want, p.run(qk, packed, r, 1))) << v.name << (packed ? " packed" : "") << " row " << r;
      }
    }
  }
}

// The op-level int8 cases (linear, grouped_matmul, fused_moe) on every variant, the Avx2 tier with and
// without AVX-VNNI included (CpuVendor.EverySimdPathMatchesReference runs each tier with its default).
TEST(CpuQuantInt8, OpCasesMatchReferenceOnEveryVariant) {
  const std::vector<Int8Variant> variants = int8_variants();
  if (variants.empty()) GTEST_SKIP() << "no SIMD int8 tile on this machine";
  const Registry& reg = builtin_registry();
  for (const Int8Variant& v : variants) {
    VariantScope scope(v);
    for (OpType op : {OpType::Linear, OpType::GroupedMatmul, OpType::FusedMoe}) {
      const KernelEntry* e = reg.find(op, kCpuVendor, DType::I8);
      const KernelEntry* ref = reg.find(op, "reference", DType::I8);
      ASSERT_NE(e, nullptr);
      ASSERT_NE(ref, nullptr);
      for (const Case& c : cases_for(op))
        if (c.applies_to(DType::I8))
          run_case(op, c, DType::I8, e->fn, ref->fn, e->kernel_name + " [" + v.name + ", case " + c.name + "]");
    }
  }
}

// fused_moe on int8 experts in the int8 precision: 40 tokens over 4 experts put ~20 rows on each (the
// packed AMX tile), a lone token one (vpdpbusd): the same bits.
TEST(CpuQuantInt8, FusedMoeRowAloneEqualsRowInBatch) {
  const std::vector<Int8Variant> variants = int8_variants();
  if (variants.empty()) GTEST_SKIP() << "no SIMD int8 tile on this machine";
  std::mt19937 g(23);
  const int64_t n = 40, h = 128, inter = 96, experts = 4;
  Tensor hidden = rand_f32(g, {n, h}, -2.0f, 2.0f), ids, weights;
  make_routing(g, n, 2, iota_i32(static_cast<int32_t>(experts)), ids, weights);
  auto ew = std::make_shared<ExpertWeights>();
  for (int64_t e = 0; e < experts; ++e) {
    const Weight gw = make_quant_weight(g, DType::I8, 1, inter, h), uw = make_quant_weight(g, DType::I8, 1, inter, h),
                 dw = make_quant_weight(g, DType::I8, 1, h, inter);
    ew->gate.push_back(gw.values);
    ew->up.push_back(uw.values);
    ew->down.push_back(dw.values);
    ew->gate_q.push_back(gw.quant);
    ew->up_q.push_back(uw.quant);
    ew->down_q.push_back(dw.quant);
  }
  const auto k = resolve_kernel<OpType::FusedMoe>(builtin_registry(), kCpuVendor, DType::I8);
  auto run = [&](int64_t r0, int64_t r1) {
    Tensor out = Tensor::empty(DType::F32, {r1 - r0, h});
    MoeMetadata meta;
    meta.num_tokens = r1 - r0;
    k.fn(FusedMoeArgs{hidden.slice_rows(r0, r1), ew.get(), weights.slice_rows(r0, r1), ids.slice_rows(r0, r1), out,
                      &meta, MatmulPrecision::Quantized});
    return out;
  };
  for (const Int8Variant& v : variants) {
    VariantScope scope(v);
    const Tensor full = run(0, n);
    for (int64_t r : {0, 7, 39}) {
      const Tensor one = run(r, r + 1);
      EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << v.name << " row " << r;
    }
  }
}

}  // namespace
}  // namespace opchain::harness
