// The cpu vendor beyond the per-op harness: registration parity with reference, batch invariance and
// thread-count determinism (Note [cpu kernels]), the fused_moe sub-kernel chain under a Tracer, and
// every SIMD code path the machine supports against reference.
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "vendors/cpu/attention.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/simd.h"
#include "vendors/cpu_paths.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

const Registry& reg() { return builtin_registry(); }

template <OpType Op>
Kernel<Op> cpu_kernel(DType t) {
  return resolve_kernel<Op>(reg(), kCpuVendor, t);
}

std::vector<cpu::Isa> supported_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : cpu::kAllIsas)
    if (cpu::isa_supported(i)) out.push_back(i);
  return out;
}

// Restores the global pool size and the SIMD path when a test changes them.
using EnvGuard = CpuPathGuard;

TEST(CpuVendor, RegistersWhatReferenceRegisters) {
  for (const OpInfo& info : kOpTable) {
    for (const KernelEntry* e : reg().entries_for(info.type)) {
      if (e->vendor == "reference") {
        const KernelEntry* c = reg().find(info.type, kCpuVendor, e->dtype);
        ASSERT_NE(c, nullptr) << "cpu lacks " << info.key << "(" << dtype_name(e->dtype) << ")";
        EXPECT_EQ(c->kernel_name, "cpu::" + std::string(info.key) + "_" + std::string(dtype_name(e->dtype)));
        EXPECT_TRUE(c->flags.capture_safe) << c->kernel_name;
      } else if (e->vendor == kCpuVendor) {
        EXPECT_NE(reg().find(info.type, "reference", e->dtype), nullptr) << e->kernel_name;
      }
    }
  }
}

// A CPU whose flags list AMX (and the AVX-512 set the Amx tier builds on) must get the Amx tier, or
// every AMX kernel would go untested on exactly the machines that have them.
TEST(CpuVendor, AmxTierIsOfferedWhereTheCpuHasIt) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) {
    GTEST_SKIP() << "no /proc/cpuinfo";
  }
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  }
  bool all = !flags.empty();
  for (const char* f :
       {"amx_tile", "amx_bf16", "amx_int8", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni"})
    all = all && flags.find(std::string(" ") + f + " ") != std::string::npos;
  EXPECT_EQ(cpu::isa_supported(cpu::Isa::Amx), all) << "cpu flags:" << flags;
  if (all) {
    EXPECT_EQ(cpu::active_isa() == cpu::Isa::Amx, std::getenv("OPCHAIN_CPU_ISA") == nullptr);
  }
}

TEST(CpuVendor, F16ConversionIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = f16_to_f32(static_cast<uint16_t>(h)), b = cpu::f16_to_f32_fast(static_cast<uint16_t>(h));
    uint32_t ba, bb;
    std::memcpy(&ba, &a, 4);
    std::memcpy(&bb, &b, 4);
    ASSERT_EQ(ba, bb) << "f16 bits 0x" << std::hex << h;
  }
}

// Each SIMD path the CPU has, on the cases of the ops that use it, against reference.
TEST(CpuVendor, HugeScratchIsAlignedWritableAndGrows) {
  cpu::HugeScratch s;
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  auto* a = static_cast<unsigned char*>(s.get(1000));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHuge, 0u);
  std::fill(a, a + kHuge, 0x5a);  // the whole rounded page is usable
  EXPECT_EQ(s.get(kHuge), a);     // within what it holds: the same buffer
  auto* b = static_cast<unsigned char*>(s.get(3 * kHuge + 1));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % kHuge, 0u);
  std::fill(b, b + 4 * kHuge, 0xa5);
  EXPECT_EQ(b[4 * kHuge - 1], 0xa5);
}

TEST(CpuVendor, EverySimdPathMatchesReference) {
  EnvGuard guard;
  const OpType ops[] = {OpType::Linear,
                        OpType::GroupedMatmul,
                        OpType::FusedMoe,
                        OpType::RmsNorm,
                        OpType::AddRmsNorm,
                        OpType::PrefillAttention,
                        OpType::PagedPrefillAttention,
                        OpType::PagedDecodeAttention,
                        OpType::SiluAndMul,
                        OpType::Swiglu,
                        OpType::ZeroCenteredRmsNorm,
                        OpType::L2Norm,
                        OpType::CausalConv1d,
                        OpType::GatedDeltaRule,
                        OpType::GatedRmsNorm,
                        OpType::SigmoidGateMul};
  for (const CpuPath& path : cpu_paths()) {
    ASSERT_TRUE(select_path(path));
    for (OpType op : ops) {
      for (const KernelEntry* e : reg().entries_for(op)) {
        if (e->vendor != kCpuVendor) continue;
        const KernelEntry* ref = reg().find(op, "reference", e->dtype);
        ASSERT_NE(ref, nullptr);
        for (const Case& c : cases_for(op))
          if (c.applies_to(e->dtype))
            run_case(op, c, e->dtype, e->fn, ref->fn, e->kernel_name + " [isa " + path.name + ", case " + c.name + "]");
      }
    }
  }
}

// The attention driver's key transpose and value widening are copies: every ISA gives exactly the
// scalar copy, for short chunks (zero padding), head dims that are not a lane multiple and both dtypes.
TEST(CpuVendor, TransposeKeysIsAnExactCopyOnEveryIsa) {
  std::mt19937 g(11);
  for (cpu::Isa isa : supported_isas()) {
    const cpu::SimdKernels* sk = cpu::simd_for(isa);
    ASSERT_NE(sk, nullptr) << cpu::isa_name(isa);
    for (DType dt : {DType::F32, DType::BF16})
      for (int64_t d : {64, 72, 128, 5})
        for (int64_t n : {1, 7, 16, 17, 31, 32}) {
          const int64_t w = (n + 15) / 16 * 16;
          Tensor keys = rand_tensor(g, dt, {n, d}, -3.0f, 3.0f);
          std::vector<const void*> rows;
          for (int64_t j = 0; j < n; ++j) rows.push_back(static_cast<const char*>(keys.raw()) + j * d * dtype_size(dt));
          std::vector<float> kt(static_cast<size_t>(d * w), -1.0f), want(kt.size(), 0.0f);
          for (int64_t c = 0; c < d; ++c)
            for (int64_t j = 0; j < n; ++j)
              want[static_cast<size_t>(c * w + j)] =
                  dt == DType::BF16 ? bf16_to_f32(keys.data<uint16_t>()[j * d + c]) : keys.data<float>()[j * d + c];
          sk->transpose_keys(rows.data(), dt, n, d, kt.data(), w);
          EXPECT_EQ(std::memcmp(kt.data(), want.data(), kt.size() * sizeof(float)), 0)
              << "isa " << cpu::isa_name(isa) << " " << dtype_name(dt) << " n " << n << " d " << d;
          if (dt == DType::BF16) {
            std::vector<float> wide(static_cast<size_t>(n * d)), exact(wide.size());
            for (size_t i = 0; i < wide.size(); ++i) exact[i] = bf16_to_f32(keys.data<uint16_t>()[i]);
            sk->widen_bf16(keys.data<uint16_t>(), wide.data(), n * d);
            EXPECT_EQ(std::memcmp(wide.data(), exact.data(), wide.size() * sizeof(float)), 0)
                << "widen_bf16 isa " << cpu::isa_name(isa);
          }
        }
  }
}

// The online softmax's per-chunk steps: scale_max gives the scalar loop's products and maximum exactly;
// exp_shifted_sum writes exp_shifted's values and returns their sum (to rounding, a fixed order).
// The fp8 weight and activation widening is exact: every e4m3 code (subnormals, both zeros, NaN) gives
// f8e4m3_to_f32's bits on every ISA, for lengths with and without a tail.
TEST(CpuVendor, WidenF8e4m3IsExactOnEveryIsa) {
  std::vector<uint8_t> codes(256 * 3 + 5);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i * 7 + i / 256);
  for (cpu::Isa isa : supported_isas()) {
    const cpu::SimdKernels* sk = cpu::simd_for(isa);
    ASSERT_NE(sk, nullptr) << cpu::isa_name(isa);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{256}, static_cast<int64_t>(codes.size())}) {
      std::vector<float> got(static_cast<size_t>(n)), want(got.size());
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = f8e4m3_to_f32(codes[static_cast<size_t>(i)]);
      sk->widen_f8e4m3(codes.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << "isa " << cpu::isa_name(isa) << " n " << n;
    }
  }
}

TEST(CpuVendor, SoftmaxChunkStepsOnEveryIsa) {
  std::mt19937 g(13);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  for (cpu::Isa isa : supported_isas()) {
    const cpu::SimdKernels* sk = cpu::simd_for(isa);
    for (int64_t n : {0, 1, 5, 16, 17, 31, 32}) {
      std::vector<float> s(static_cast<size_t>(n)), want(s.size());
      for (auto& x : s) x = u(g);
      float want_max = -std::numeric_limits<float>::infinity();
      for (size_t j = 0; j < s.size(); ++j) {
        want[j] = s[j] * 0.088f;
        want_max = std::max(want_max, want[j]);
      }
      const float got_max = sk->scale_max(s.data(), 0.088f, n);
      EXPECT_EQ(got_max, want_max) << cpu::isa_name(isa) << " n " << n;
      if (n == 0) continue;  // (memcmp must not see the empty vectors' null data())
      EXPECT_EQ(std::memcmp(s.data(), want.data(), s.size() * sizeof(float)), 0) << cpu::isa_name(isa) << " n " << n;
      std::vector<float> e(s.size()), e_ref(s.size());
      sk->exp_shifted(s.data(), got_max, e_ref.data(), n);
      const float sum = sk->exp_shifted_sum(s.data(), got_max, e.data(), n);
      EXPECT_EQ(std::memcmp(e.data(), e_ref.data(), e.size() * sizeof(float)), 0) << cpu::isa_name(isa) << " n " << n;
      double exact = 0.0;
      for (float x : e_ref) exact += x;
      EXPECT_NEAR(sum, exact, 1e-6 * exact) << cpu::isa_name(isa) << " n " << n;
      EXPECT_EQ(sum, sk->exp_shifted_sum(s.data(), got_max, e.data(), n));
    }
  }
}

// softmax_chunk_rows is scale_max, the rescale and exp_shifted_sum row by row, to the bit: rows with a
// whole chunk, a short one and none of it, maxima that rise, stay and start at -inf, every ISA.
TEST(CpuVendor, SoftmaxChunkRowsIsTheRowStepsOnEveryIsa) {
  std::mt19937 g(17);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  constexpr int64_t kRows = 11, kLd = 32, kD = 40;
  const int64_t counts[kRows] = {32, 32, 31, 17, 16, 5, 1, 0, 32, 32, 20};
  for (cpu::Isa isa : supported_isas()) {
    const cpu::SimdKernels* sk = cpu::simd_for(isa);
    std::vector<float> s(kRows * kLd), m(kRows), l(kRows), acc(kRows * kD);
    for (auto& x : s) x = u(g);
    for (auto& x : acc) x = u(g);
    for (int64_t r = 0; r < kRows; ++r) {
      m[r] = r % 3 == 0 ? -std::numeric_limits<float>::infinity() : r % 3 == 1 ? 0.5f : 4.0f;
      l[r] = r % 3 == 0 ? 0.0f : 1.0f + static_cast<float>(r);
    }
    std::vector<float> ws = s, wm = m, wl = l, wacc = acc;
    for (int64_t r = 0; r < kRows; ++r) {
      float* sr = ws.data() + r * kLd;
      const float chunk_max = sk->scale_max(sr, 0.088f, counts[r]);
      if (chunk_max > wm[r]) {
        const float alpha = std::exp(wm[r] - chunk_max);
        wl[r] *= alpha;
        sk->scale(wacc.data() + r * kD, alpha, kD);
        wm[r] = chunk_max;
      }
      wl[r] += sk->exp_shifted_sum(sr, wm[r], sr, counts[r]);
    }
    sk->softmax_chunk_rows(s.data(), kLd, kRows, counts, 0.088f, m.data(), l.data(), acc.data(), kD);
    const std::string at = cpu::isa_name(isa);
    EXPECT_EQ(std::memcmp(s.data(), ws.data(), s.size() * sizeof(float)), 0) << at;
    EXPECT_EQ(std::memcmp(m.data(), wm.data(), m.size() * sizeof(float)), 0) << at;
    EXPECT_EQ(std::memcmp(l.data(), wl.data(), l.size() * sizeof(float)), 0) << at;
    EXPECT_EQ(std::memcmp(acc.data(), wacc.data(), acc.size() * sizeof(float)), 0) << at;
  }
}

// ---- batch invariance: row r alone == row r inside a batch of 37, bit for bit -----------------

constexpr int64_t kBatch = 37;
const int64_t kProbeRows[] = {0, 1, 17, 36};

void check_linear_invariance(DType dt, MatmulPrecision p = MatmulPrecision::F32) {
  std::mt19937 g(7);
  const int64_t in = 257, out_f = 200;  // odd K (a partial vector), N not a tile multiple
  Tensor x = rand_f32(g, {kBatch, in});
  Tensor w = rand_tensor(g, dt, {out_f, in}, -0.1f, 0.1f), b = rand_tensor(g, dt, {out_f});
  const auto k = cpu_kernel<OpType::Linear>(dt);
  Tensor full = Tensor::empty(DType::F32, {kBatch, out_f});
  k.fn(LinearArgs{x, w, b, full, p});
  for (int64_t r : kProbeRows) {
    Tensor one = Tensor::empty(DType::F32, {1, out_f});
    k.fn(LinearArgs{x.slice_rows(r, r + 1), w, b, one, p});
    EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0)
        << "linear " << dtype_name(dt) << " precision " << matmul_precision_name(p) << " row " << r
        << " differs alone vs in a batch of " << kBatch;
  }
  // and a sub-batch of 7 rows
  Tensor part = Tensor::empty(DType::F32, {7, out_f});
  k.fn(LinearArgs{x.slice_rows(10, 17), w, b, part, p});
  EXPECT_EQ(std::memcmp(part.raw(), full.slice_rows(10, 17).raw(), part.nbytes()), 0) << "linear rows 10..16";
}

TEST(CpuBatchInvariance, Linear) {
  EnvGuard guard;
  for (const CpuPath& path : cpu_paths()) {
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) check_linear_invariance(dt);
    check_linear_invariance(DType::BF16, MatmulPrecision::Bf16);  // Note [bf16 dot]: vdpbf16ps, AMX tiles
  }
}

// Quantised weights in their format's precision: int4 groups (the SIMD tile's and the panel path's
// group sizes), int8 channels (integer dots) and fp8 channels and blocks of 128 (the fp8 tile), row r
// alone == row r in a batch, bit for bit. 8200
// output features: a lone row runs in the decode path's wide tiles (1024 columns), the batch in 64.
TEST(CpuBatchInvariance, QuantizedLinear) {
  EnvGuard guard;
  std::mt19937 g(11);
  const int64_t in = 256;
  Tensor x = rand_f32(g, {kBatch, in});
  for (const CpuPath& path : cpu_paths()) {  // the int4 tile computes in either bf16 dot form
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    for (auto [dt, variant, out_f] :
         {std::tuple{DType::U8, 0, 72}, std::tuple{DType::U8, 1, 72}, std::tuple{DType::U8, 3, 72},
          std::tuple{DType::U8, 4, 72}, std::tuple{DType::U8, 5, 72}, std::tuple{DType::I8, 1, 72},
          std::tuple{DType::U8, 0, 8200}, std::tuple{DType::U8, 5, 8200}, std::tuple{DType::U8, 4, 8200},
          std::tuple{DType::I8, 1, 8200}, std::tuple{DType::F8E4M3, 1, 72}, std::tuple{DType::F8E4M3, 4, 72},
          std::tuple{DType::F8E4M3, 4, 8200}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " variant " + std::to_string(variant) + " out " +
                   std::to_string(out_f));
      const Weight w = make_quant_weight(g, dt, variant, out_f, in);
      const auto k = cpu_kernel<OpType::Linear>(dt);
      Tensor full = Tensor::empty(DType::F32, {kBatch, out_f});
      k.fn(LinearArgs{x, w.values, {}, full, MatmulPrecision::Quantized, w.quant.get()});
      for (int64_t r : kProbeRows) {
        Tensor one = Tensor::empty(DType::F32, {1, out_f});
        k.fn(LinearArgs{x.slice_rows(r, r + 1), w.values, {}, one, MatmulPrecision::Quantized, w.quant.get()});
        EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
      }
    }
  }
}

// The int4 and fp8 tiles at every decode-sized row count (the few-row tiles stream the codes, larger ones
// read an unpacked panel, each with its own register blocking) against the same rows in a 37-row batch, bit
// for bit. k = 2048 with activations spread over many binades, so that the f32 sums round and a changed
// summation order shows (at k = 256 the bf16 products' sums are mostly exact).
TEST(CpuBatchInvariance, QuantizedLinearFewRows) {
  EnvGuard guard;
  std::mt19937 g(12);
  const int64_t in = 2048, out_f = 72;
  Tensor x = rand_f32(g, {kBatch, in});
  std::uniform_int_distribution<int> binade(-12, 4);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::ldexp(x.data<float>()[i], binade(g));
  for (const CpuPath& path : cpu_paths()) {
    SCOPED_TRACE(path.name);
    ASSERT_TRUE(select_path(path));
    // int4 groups of 64 and 128 (the AVX-512 tile's narrow and wide chunks), fp8 blocks of 128.
    for (auto [dt, variant] : {std::pair{DType::U8, 3}, std::pair{DType::U8, 4}, std::pair{DType::F8E4M3, 4}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " variant " + std::to_string(variant));
      const Weight w = make_quant_weight(g, dt, variant, out_f, in);
      const auto k = cpu_kernel<OpType::Linear>(dt);
      Tensor full = Tensor::empty(DType::F32, {kBatch, out_f});
      k.fn(LinearArgs{x, w.values, {}, full, MatmulPrecision::Quantized, w.quant.get()});
      for (int64_t n = 1; n <= 9; ++n) {
        Tensor few = Tensor::empty(DType::F32, {n, out_f});
        k.fn(LinearArgs{x.slice_rows(0, n), w.values, {}, few, MatmulPrecision::Quantized, w.quant.get()});
        EXPECT_EQ(std::memcmp(few.raw(), full.slice_rows(0, n).raw(), few.nbytes()), 0) << n << " rows";
      }
    }
  }
}

// A K long enough for the packed GEMM's k blocking (512 per block on Avx2, 2048 on Avx512; a partial last
// vector), more weight rows than one 48-row pass: rows in a 32-row tile (k-blocked, packed) == the same
// rows alone (matvec kernel) bit for bit, and within the op's tolerance of reference. Every weight dtype:
// on Avx2 the first row block of each weight group converts the group as it multiplies (micro_packed_widen).
TEST(CpuBatchInvariance, LinearLongK) {
  EnvGuard guard;
  std::mt19937 g(9);
  const int64_t in = 4500, out_f = 100;
  Tensor x = rand_f32(g, {kBatch, in});
  for (DType dt : {DType::BF16, DType::F16, DType::F32})
    for (cpu::Isa isa : supported_isas()) {
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(dtype_name(dt)));
      Tensor w = rand_tensor(g, dt, {out_f, in}, -0.1f, 0.1f);
      ASSERT_TRUE(cpu::set_active_isa(isa));
      const auto k = cpu_kernel<OpType::Linear>(dt);
      Tensor full = Tensor::empty(DType::F32, {kBatch, out_f}), ref = Tensor::empty(DType::F32, {kBatch, out_f});
      k.fn(LinearArgs{x, w, Tensor{}, full});
      resolve_kernel<OpType::Linear>(reg(), "reference", dt).fn(LinearArgs{x, w, Tensor{}, ref});
      for (int64_t i = 0; i < full.numel(); ++i)
        ASSERT_LE(std::fabs(full.data<float>()[i] - ref.data<float>()[i]) / (1.0f + std::fabs(ref.data<float>()[i])),
                  1e-4f)
            << "element " << i;
      for (int64_t r : kProbeRows) {
        Tensor one = Tensor::empty(DType::F32, {1, out_f});
        k.fn(LinearArgs{x.slice_rows(r, r + 1), w, Tensor{}, one});
        EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
      }
      // Batched-decode sizes: the narrow tiers run 5-15 rows on the packed kernel on Intel, on register
      // blocks elsewhere (both walked here), the zmm tiers on register blocks.
      for (int64_t min_rows : {5, 16}) {
        cpu::set_narrow_packed_min_rows(min_rows);
        for (int64_t n : {5, 8, 13}) {
          Tensor part = Tensor::empty(DType::F32, {n, out_f});
          k.fn(LinearArgs{x.slice_rows(3, 3 + n), w, Tensor{}, part});
          EXPECT_EQ(std::memcmp(part.raw(), full.slice_rows(3, 3 + n).raw(), part.nbytes()), 0)
              << n << " rows, packed from " << min_rows;
        }
      }
    }
}

struct MoeProblem {
  Tensor hidden, ids, weights;
  std::shared_ptr<ExpertWeights> experts;
};

MoeProblem make_moe(DType dt, int64_t n) {
  std::mt19937 g(11);
  MoeProblem p;
  p.hidden = rand_f32(g, {n, 64}, -2.0f, 2.0f);
  make_routing(g, n, 2, iota_i32(8), p.ids, p.weights);
  p.experts = make_experts(g, dt, 8, 64, 48);
  return p;
}

Tensor run_moe(const MoeProblem& p, int64_t r0, int64_t r1, DType dt, MatmulPrecision prec = MatmulPrecision::F32) {
  Tensor out = Tensor::empty(DType::F32, {r1 - r0, p.hidden.size(1)});
  MoeMetadata meta;
  meta.num_tokens = r1 - r0;
  cpu_kernel<OpType::FusedMoe>(dt).fn(FusedMoeArgs{p.hidden.slice_rows(r0, r1), p.experts.get(),
                                                   p.weights.slice_rows(r0, r1), p.ids.slice_rows(r0, r1), out, &meta,
                                                   prec});
  return out;
}

TEST(CpuBatchInvariance, FusedMoe) {
  EnvGuard guard;
  for (const CpuPath& path : cpu_paths()) {
    ASSERT_TRUE(select_path(path));
    for (auto [dt, prec] : {std::pair{DType::F32, MatmulPrecision::F32}, std::pair{DType::BF16, MatmulPrecision::F32},
                            std::pair{DType::BF16, MatmulPrecision::Bf16}}) {
      const MoeProblem p = make_moe(dt, kBatch);
      const Tensor full = run_moe(p, 0, kBatch, dt, prec);
      for (int64_t r : kProbeRows) {
        const Tensor one = run_moe(p, r, r + 1, dt, prec);
        EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0)
            << "fused_moe " << dtype_name(dt) << " precision " << matmul_precision_name(prec) << " [" << path.name
            << "] row " << r;
      }
    }
  }
}

// fused_moe at bf16 precision == its own step kernels chained at bf16 precision, bit for bit, on every
// SIMD path: where the CPU has no bf16 dot instruction fused_moe rounds the token rows once before the
// gather and runs gate and up at f32 (Note [fused_moe rounds once]), which must be what rounding inside
// each grouped_matmul gives. The hidden rows are arbitrary f32 values, so a missed rounding shows.
TEST(CpuFusedMoe, Bf16EqualsItsStepKernelsChained) {
  EnvGuard guard;
  const int64_t n = 37, k = 2;
  const MoeProblem p = make_moe(DType::BF16, n);
  const ExpertWeights& w = *p.experts;
  const int64_t h = p.hidden.size(1), inter = w.intermediate(), experts = w.num_experts();
  for (const CpuPath& path : cpu_paths()) {
    ASSERT_TRUE(select_path(path));
    const Tensor fused = run_moe(p, 0, n, DType::BF16, MatmulPrecision::Bf16);
    MoeMetadata meta;
    meta.num_tokens = n;
    Tensor sorted = Tensor::empty(DType::F32, {n * k, h}), offsets = Tensor::empty(DType::I32, {experts + 1}),
           where = Tensor::empty(DType::I32, {n * k});
    cpu_kernel<OpType::MoeInitRouting>(DType::F32)
        .fn(MoeInitRoutingArgs{p.hidden, p.ids, experts, &meta, sorted, offsets, where});
    Tensor gate_up = Tensor::empty(DType::F32, {n * k, 2 * inter}), act = Tensor::empty(DType::F32, {n * k, inter}),
           down = Tensor::empty(DType::F32, {n * k, h}), chained = Tensor::empty(DType::F32, {n, h});
    const auto gmm = cpu_kernel<OpType::GroupedMatmul>(DType::BF16);
    gmm.fn(GroupedMatmulArgs{sorted, offsets, &w.gate, gate_up, 0, MatmulPrecision::Bf16});
    gmm.fn(GroupedMatmulArgs{sorted, offsets, &w.up, gate_up, inter, MatmulPrecision::Bf16});
    cpu_kernel<OpType::Swiglu>(DType::F32).fn(SwigluArgs{gate_up, act});
    gmm.fn(GroupedMatmulArgs{act, offsets, &w.down, down, 0, MatmulPrecision::Bf16});
    cpu_kernel<OpType::MoeTokenUnpermute>(DType::F32).fn(MoeTokenUnpermuteArgs{down, where, p.weights, chained});
    EXPECT_TRUE(bit_equal(fused, chained)) << path.name;
  }
}

// The metadata of sequence b of `meta` alone: batch 1, its own lengths and block table row.
AttnMetadata sequence_alone(const AttnMetadata& meta, int64_t b) {
  AttnMetadata m = meta;
  m.batch_size = 1;
  m.num_tokens = meta.q_seqlens.data<int32_t>()[b];
  m.kv_seqlens = meta.kv_seqlens.slice_rows(b, b + 1);
  m.q_seqlens = meta.q_seqlens.slice_rows(b, b + 1);
  m.q_start_loc = i32_tensor({0});
  m.block_tables = meta.block_tables.slice_rows(b, b + 1).reshape({1, meta.block_tables.size(1)});
  return m;
}

// Decode: sequence r alone (its own block table row) == sequence r among 37, on every SIMD path, f32
// and bf16 caches, with lengths past the kv segments the cpu kernel merges (Note [decode attention]).
TEST(CpuBatchInvariance, PagedDecodeAttention) {
  EnvGuard guard;
  std::mt19937 g(5);
  std::vector<SeqLens> seqs;
  for (int64_t i = 0; i < kBatch; ++i) seqs.push_back({1, static_cast<int>(1 + (i * 1337 + 500) % 2600)});
  const int64_t bs = 16, hq = 8, hk = 2, d = 64;
  AttnSetup s = make_attn(g, seqs, bs, 0, true);
  Tensor q = rand_f32(g, {kBatch, hq, d}, -2.0f, 2.0f);
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor kc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f),
           vc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d});
    const auto k = cpu_kernel<OpType::PagedDecodeAttention>(dt);
    for (cpu::Isa isa : supported_isas()) {
      ASSERT_TRUE(cpu::set_active_isa(isa));
      Tensor full = Tensor::empty(DType::F32, {kBatch, hq, d});
      k.fn(PagedDecodeAttentionArgs{q, kc, vc, full, 0.125f, s.meta.get()});
      for (int64_t r : kProbeRows) {
        const AttnMetadata m = sequence_alone(*s.meta, r);
        Tensor one = Tensor::empty(DType::F32, {1, hq, d});
        k.fn(PagedDecodeAttentionArgs{q.slice_rows(r, r + 1), kc, vc, one, 0.125f, &m});
        EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0)
            << "decode sequence " << r << " (kv " << seqs[static_cast<size_t>(r)].kv_len << ") " << dtype_name(dt)
            << " [" << cpu::isa_name(isa) << "]";
      }
    }
  }
}

// Random queries and paged caches (blocks of bs positions) for a prefill over the cache.
struct PagedPrefillInputs {
  AttnSetup s;
  Tensor q, kc, vc;
};
PagedPrefillInputs random_paged_prefill(std::mt19937& g, const std::vector<SeqLens>& seqs, int64_t bs, int64_t hq,
                                        int64_t hk, int64_t d) {
  AttnSetup s = make_attn(g, seqs, bs, 0, false);
  Tensor q = rand_f32(g, {s.rows, hq, d}, -2.0f, 2.0f);
  Tensor kc = rand_f32(g, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f), vc = rand_f32(g, {s.num_blocks, bs, hk, d});
  return {std::move(s), q, kc, vc};
}

// Prefill over the cache: a sequence alone == the same sequence in a batch with others.
TEST(CpuBatchInvariance, PagedPrefillAttention) {
  std::mt19937 g(9);
  const std::vector<SeqLens> seqs = {{5, 20}, {37, 60}, {1, 33}, {20, 20}};
  const int64_t hq = 4, d = 40;
  auto [s, q, kc, vc] = random_paged_prefill(g, seqs, 8, hq, 2, d);
  const auto k = cpu_kernel<OpType::PagedPrefillAttention>(DType::F32);
  Tensor full = Tensor::empty(DType::F32, {s.rows, hq, d});
  k.fn(PagedPrefillAttentionArgs{q, kc, vc, full, 0.15f, s.meta.get()});
  for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
    const int64_t start = s.meta->q_start_loc.data<int32_t>()[b], len = seqs[static_cast<size_t>(b)].q_len;
    const AttnMetadata m = sequence_alone(*s.meta, b);
    Tensor one = Tensor::empty(DType::F32, {len, hq, d});
    k.fn(PagedPrefillAttentionArgs{q.slice_rows(start, start + len), kc, vc, one, 0.15f, &m});
    EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(start, start + len).raw(), one.nbytes()), 0) << "sequence " << b;
  }
}

// Each sequence alone == the same sequence in a batch, bit for bit, on every path: at F32 (the f32
// loops, an odd head dim) and at Bf16 with a head dim of 64 (Note [AMX attention] on Isa::Amx, where
// chunks of 128 positions and query tiles of 16 split the sequences differently in the two calls; Note
// [bf16 dot attention] on Avx512Bf16 in the Vdpbf16ps form).
TEST(CpuBatchInvariance, PrefillAttention) {
  EnvGuard guard;
  std::mt19937 g(13);
  const std::vector<SeqLens> seqs = {{9, 9}, {137, 137}, {1, 1}, {70, 70}, {300, 300}};
  for (const auto& [prec, d] :
       {std::pair{MatmulPrecision::F32, int64_t{33}}, std::pair{MatmulPrecision::Bf16, int64_t{64}}})
    for (const CpuPath& path : cpu_paths()) {
      SCOPED_TRACE(path.name + " " + std::string(matmul_precision_name(prec)));
      ASSERT_TRUE(select_path(path));
      const int64_t hq = 6, hk = 3;
      AttnSetup s = make_attn(g, seqs, 16, 0, false);
      Tensor q = rand_f32(g, {s.rows, hq, d}), kk = rand_f32(g, {s.rows, hk, d}), v = rand_f32(g, {s.rows, hk, d});
      const auto k = cpu_kernel<OpType::PrefillAttention>(DType::F32);
      Tensor full = Tensor::empty(DType::F32, {s.rows, hq, d});
      k.fn(PrefillAttentionArgs{q, kk, v, full, 0.2f, s.meta.get(), prec});
      for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
        const int64_t start = s.meta->q_start_loc.data<int32_t>()[b], len = seqs[static_cast<size_t>(b)].q_len;
        AttnMetadata m = *s.meta;
        m.batch_size = 1;
        m.q_seqlens = s.meta->q_seqlens.slice_rows(b, b + 1);
        m.kv_seqlens = s.meta->kv_seqlens.slice_rows(b, b + 1);
        m.q_start_loc = i32_tensor({0});
        Tensor one = Tensor::empty(DType::F32, {len, hq, d});
        k.fn(PrefillAttentionArgs{q.slice_rows(start, start + len), kk.slice_rows(start, start + len),
                                  v.slice_rows(start, start + len), one, 0.2f, &m, prec});
        EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(start, start + len).raw(), one.nbytes()), 0)
            << "sequence " << b;
      }
    }
}

// The largest |bf16 - f32| / (1 + |f32|) of one prefill (100 queries, hq 8, hk 2, head dim d) at Bf16
// against F32 precision on the active path: zero where Bf16 runs the f32 loops.
float bf16_attention_departure(std::mt19937& g, int64_t d) {
  AttnSetup s = make_attn(g, {{100, 100}}, 16, 0, false);
  Tensor q = rand_f32(g, {s.rows, 8, d}, -2.0f, 2.0f), kk = rand_f32(g, {s.rows, 2, d}, -2.0f, 2.0f),
         v = rand_f32(g, {s.rows, 2, d});
  const auto k = cpu_kernel<OpType::PrefillAttention>(DType::F32);
  Tensor f32 = Tensor::empty(DType::F32, {s.rows, 8, d}), bf16 = Tensor::empty(DType::F32, {s.rows, 8, d});
  k.fn(PrefillAttentionArgs{q, kk, v, f32, 0.125f, s.meta.get(), MatmulPrecision::F32});
  k.fn(PrefillAttentionArgs{q, kk, v, bf16, 0.125f, s.meta.get(), MatmulPrecision::Bf16});
  float worst = 0.0f;
  for (int64_t i = 0; i < f32.numel(); ++i)
    worst = std::max(
        worst, std::fabs(bf16.data<float>()[i] - f32.data<float>()[i]) / (1.0f + std::fabs(f32.data<float>()[i])));
  return worst;
}

// On Isa::Amx a Bf16 prefill really takes the tile path (its results differ from the f32 loops' by
// the bf16 roundings) and stays within the harness's bf16 tolerance of them; a head dim the tiles do
// not take (24) runs the f32 loops at any precision.
TEST(CpuAmxAttention, Bf16PrecisionRunsOnTheTilesOnlyWhereTheyApply) {
  EnvGuard guard;
  const auto isas = supported_isas();
  if (std::find(isas.begin(), isas.end(), cpu::Isa::Amx) == isas.end()) GTEST_SKIP() << "this CPU has no AMX";
  ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Amx));
  std::mt19937 g(21);
  const float d128 = bf16_attention_departure(g, 128);
  EXPECT_GT(d128, 1e-5f) << "d 128: no bf16 rounding seen";
  EXPECT_LT(d128, 1e-2f) << "d 128";
  EXPECT_EQ(bf16_attention_departure(g, 24), 0.0f) << "d 24";
}

// Likewise on Avx512Bf16 in the Vdpbf16ps form (Note [bf16 dot attention]), for head dims of 128 and 96
// (the value products' 8- and 2-vector column blocks); in the FmaPairs form, where VDPBF16PS is slower
// than the FMA, and for a head dim of 24, Bf16 runs the f32 loops.
TEST(CpuDotAttention, Bf16PrecisionRunsOnVdpbf16psOnlyWhereItApplies) {
  EnvGuard guard;
  if (!cpu::isa_supported(cpu::Isa::Avx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Avx512Bf16));
  std::mt19937 g(22);
  cpu::set_bf16_dot_form(cpu::Bf16DotForm::Vdpbf16ps);
  for (int64_t d : {int64_t{128}, int64_t{96}}) {
    const float worst = bf16_attention_departure(g, d);
    EXPECT_GT(worst, 1e-5f) << "d " << d << ": no bf16 rounding seen";
    EXPECT_LT(worst, 1e-2f) << "d " << d;
  }
  EXPECT_EQ(bf16_attention_departure(g, 24), 0.0f) << "d 24";
  cpu::set_bf16_dot_form(cpu::Bf16DotForm::FmaPairs);
  EXPECT_EQ(bf16_attention_departure(g, 128), 0.0f) << "FmaPairs form, d 128";
}

// The dot path's softmax step (Note [bf16 dot attention]) against a double-precision one: every count of
// visible positions a chunk can give a row (0, a short chunk, all 32), rows whose maximum rises (their
// numerator and denominator rescaled) and rows whose maximum stays. Its powers of two are within 2e-7 of
// exp2, so the denominator is within 1e-6, every weight within one bf16 step of the rounded exact one,
// and a position the row must not see weighs exactly zero.
TEST(CpuDotAttention, SoftmaxWeightsMatchExactPowersOfTwo) {
  if (!cpu::isa_supported(cpu::Isa::Avx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  std::mt19937 g(24);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  constexpr int64_t chunk = cpu::dot_attention::kChunk, d = 32;
  const std::vector<int64_t> counts = {0, 1, 5, 16, 17, 31, 32, 32, 32, 3};
  const int64_t rows = static_cast<int64_t>(counts.size());
  const float scale = 0.3f, c = scale * 1.44269504088896341f;
  std::vector<float> s(static_cast<size_t>(rows * chunk)), acc(static_cast<size_t>(rows * d));
  for (float& x : s) x = u(g);
  for (float& x : acc) x = u(g);
  std::vector<float> m(static_cast<size_t>(rows)), l(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {  // even rows: a maximum the chunk exceeds; odd rows: one it cannot reach
    m[r] = r % 2 == 0 ? -std::numeric_limits<float>::infinity() : (r == 3 ? -1.0f : 40.0f);
    l[r] = r % 2 == 0 ? 0.0f : 2.5f;
  }
  const std::vector<float> m0 = m, l0 = l, acc0 = acc;
  std::vector<uint32_t> w(static_cast<size_t>(rows * chunk / 2));
  cpu::dot_attention::softmax_weights(s.data(), chunk, rows, counts.data(), scale, m.data(), l.data(), acc.data(), d,
                                      w.data());
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r) + ", " + std::to_string(counts[r]) + " visible");
    const int64_t n = counts[r];
    float top = m0[r];
    for (int64_t j = 0; j < n; ++j) top = std::max(top, s[r * chunk + j] * c);
    EXPECT_EQ(m[r], top);
    const double alpha = std::isinf(m0[r]) ? 0.0 : std::exp2(static_cast<double>(m0[r]) - top);
    double sum = l0[r] * alpha;
    for (int64_t j = 0; j < chunk; ++j) {
      const uint16_t got = static_cast<uint16_t>(w[r * chunk / 2 + j / 2] >> (16 * (j % 2)));
      if (j >= n) {
        EXPECT_EQ(got, 0) << "position " << j;
        continue;
      }
      const double exact = std::exp2(static_cast<double>(s[r * chunk + j] * c) - top);
      sum += exact;
      EXPECT_LE(std::fabs(bf16_to_f32(got) - exact), exact / 128.0) << "position " << j;
    }
    EXPECT_NEAR(l[r], sum, 1e-6 * std::max(sum, 1e-30)) << "denominator";
    for (int64_t i = 0; i < d; ++i) {
      const double want = n == 0 || top == m0[r] ? acc0[r * d + i] : acc0[r * d + i] * alpha;
      EXPECT_NEAR(acc[r * d + i], want, 1e-6 * std::fabs(want) + 1e-30) << "numerator " << i;
    }
  }
}

// A single-query sequence of a prefill over the cache (a decode row in a step that also prefills another
// sequence) gives the bits paged_decode_attention gives it in a decode-only step, on every tier, with
// f32 and bf16 caches and at both precisions (on Isa::Amx at Bf16 the multi-query sequences beside it
// take the tiles); lengths past one kv segment of the decode kernel included.
TEST(CpuBatchInvariance, SingleQuerySequencesOfAPrefillEqualDecode) {
  EnvGuard guard;
  std::mt19937 g(23);
  const std::vector<SeqLens> seqs = {{1, 40}, {20, 20}, {1, 2100}, {1, 1}, {33, 70}, {1, 1024}};
  const int64_t bs = 16, hq = 8, hk = 2, d = 64;
  AttnSetup s = make_attn(g, seqs, bs, 0, false);
  Tensor q = rand_f32(g, {s.rows, hq, d}, -2.0f, 2.0f);
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor kc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f),
           vc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d});
    const auto prefill = cpu_kernel<OpType::PagedPrefillAttention>(dt);
    const auto decode = cpu_kernel<OpType::PagedDecodeAttention>(dt);
    for (cpu::Isa isa : supported_isas())
      for (MatmulPrecision prec : {MatmulPrecision::F32, MatmulPrecision::Bf16}) {
        SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(matmul_precision_name(prec)) + " " +
                     std::string(dtype_name(dt)) + " cache");
        ASSERT_TRUE(cpu::set_active_isa(isa));
        Tensor full = Tensor::empty(DType::F32, {s.rows, hq, d});
        prefill.fn(PagedPrefillAttentionArgs{q, kc, vc, full, 0.15f, s.meta.get(), prec});
        for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
          if (seqs[static_cast<size_t>(b)].q_len != 1) continue;
          const int64_t row = s.meta->q_start_loc.data<int32_t>()[b];
          AttnMetadata m = sequence_alone(*s.meta, b);
          m.is_decoding = true;
          Tensor one = Tensor::empty(DType::F32, {1, hq, d});
          decode.fn(PagedDecodeAttentionArgs{q.slice_rows(row, row + 1), kc, vc, one, 0.15f, &m});
          EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(row, row + 1).raw(), one.nbytes()), 0)
              << "single-query sequence " << b << " (kv " << seqs[static_cast<size_t>(b)].kv_len << ")";
        }
      }
  }
}

// A prefill over the cache whose metadata marks positions as decoded (a preempted sequence recomputing
// them, AttnMetadata::decoded_from) gives each of those queries the bits paged_decode_attention gives it
// at that length, and the queries before them the bits of a plain prefill; every tier, both precisions.
TEST(CpuBatchInvariance, RecomputedDecodePositionsEqualDecode) {
  EnvGuard guard;
  std::mt19937 g(29);
  const std::vector<SeqLens> seqs = {{40, 50}, {30, 1100}};
  const int64_t bs = 16, hq = 8, hk = 2, d = 64;
  const int32_t decoded_from[] = {25, 1080};  // 15 and 10 of each sequence's queries were decoded
  AttnSetup s = make_attn(g, seqs, bs, 0, false);
  Tensor q = rand_f32(g, {s.rows, hq, d}, -2.0f, 2.0f);
  Tensor kc = rand_tensor(g, DType::BF16, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f),
         vc = rand_tensor(g, DType::BF16, {s.num_blocks, bs, hk, d});
  const auto prefill = cpu_kernel<OpType::PagedPrefillAttention>(DType::BF16);
  const auto decode = cpu_kernel<OpType::PagedDecodeAttention>(DType::BF16);
  AttnMetadata marked = *s.meta;
  marked.decoded_from = i32_tensor({decoded_from[0], decoded_from[1]});
  for (cpu::Isa isa : supported_isas())
    for (MatmulPrecision prec : {MatmulPrecision::F32, MatmulPrecision::Bf16}) {
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " " + std::string(matmul_precision_name(prec)));
      ASSERT_TRUE(cpu::set_active_isa(isa));
      Tensor plain = Tensor::empty(DType::F32, {s.rows, hq, d}), got = Tensor::empty(DType::F32, {s.rows, hq, d});
      prefill.fn(PagedPrefillAttentionArgs{q, kc, vc, plain, 0.15f, s.meta.get(), prec});
      prefill.fn(PagedPrefillAttentionArgs{q, kc, vc, got, 0.15f, &marked, prec});
      for (int64_t b = 0; b < static_cast<int64_t>(seqs.size()); ++b) {
        const SeqLens& sl = seqs[static_cast<size_t>(b)];
        const int64_t row0 = s.meta->q_start_loc.data<int32_t>()[b], past = sl.kv_len - sl.q_len;
        for (int64_t i = 0; i < sl.q_len; ++i) {
          const int64_t row = row0 + i, pos = past + i;
          const Tensor one_got = got.slice_rows(row, row + 1);
          if (pos < decoded_from[b]) {
            const Tensor want = plain.slice_rows(row, row + 1);
            EXPECT_EQ(std::memcmp(one_got.raw(), want.raw(), want.nbytes()), 0) << "prefilled query " << pos;
            continue;
          }
          AttnMetadata m = sequence_alone(*s.meta, b);
          m.is_decoding = true;
          m.q_seqlens = i32_tensor({1});
          m.kv_seqlens = i32_tensor({static_cast<int32_t>(pos + 1)});
          m.num_tokens = 1;
          Tensor want = Tensor::empty(DType::F32, {1, hq, d});
          decode.fn(PagedDecodeAttentionArgs{q.slice_rows(row, row + 1), kc, vc, want, 0.15f, &m});
          EXPECT_EQ(std::memcmp(one_got.raw(), want.raw(), want.nbytes()), 0) << "decoded query " << pos;
        }
      }
    }
}

// ---- the same bits whatever the thread count ---------------------------------------------------

TEST(CpuDeterminism, SameBitsForAnyThreadCount) {
  EnvGuard guard;
  // Every cpu kernel on its harness cases, at 1, 2, 3 and 5 threads: bit-identical outputs.
  for (const OpInfo& info : kOpTable) {
    for (const KernelEntry* e : reg().entries_for(info.type)) {
      if (e->vendor != kCpuVendor || e->dtype == DType::F16) continue;
      for (const Case& c : cases_for(info.type)) {
        if (!c.applies_to(e->dtype)) continue;
        std::mt19937 rng(seed_of(c.name));
        const Instance inst = c.make(e->dtype, rng);
        Outs first;
        for (int threads : {1, 2, 3, 5}) {
          ThreadPool::set_global_threads(threads);
          Outs outs = clone_all(inst.outs);
          inst.call(e->fn, outs);
          if (first.empty()) {
            first = outs;
            continue;
          }
          for (size_t i = 0; i < outs.size(); ++i)
            EXPECT_TRUE(bit_equal(first[i], outs[i])) << e->kernel_name << " case " << c.name << " output "
                                                      << inst.out_names[i] << " at " << threads << " threads";
        }
      }
    }
  }
}

// ---- fused_moe is the chain of the cpu step kernels, traced nested ------------------------------

struct TracerGuard {
  Tracer tracer;
  TracerGuard() { Tracer::set_active(&tracer); }
  ~TracerGuard() { Tracer::set_active(nullptr); }
};

// The five step kernels, six launches: grouped_matmul runs for gate, up and down.
TEST(CpuFusedMoe, TracesItsSubKernelsNested) {
  const MoeProblem p = make_moe(DType::BF16, 5);
  Tensor out = Tensor::empty(DType::F32, {5, 64});
  MoeMetadata meta;
  meta.num_tokens = 5;
  const FusedMoeArgs args{p.hidden, p.experts.get(), p.weights, p.ids, out, &meta};
  const TraceSite site{"model.layers.0.mlp.experts", "FusedMoE", "DefaultFusedMoeImpl"};
  std::vector<TraceEvent> events;
  {
    TracerGuard tg;
    launch(cpu_kernel<OpType::FusedMoe>(DType::BF16), args, &site, [](std::string&, std::string&) {});
    events = tg.tracer.events();
  }
  std::string listing;
  for (const TraceEvent& ev : events)
    listing += "\n  depth " + std::to_string(ev.depth) + " " + ev.key + " " + ev.kernel;
  ASSERT_EQ(events.size(), 7u) << listing;
  EXPECT_EQ(events[0].key, "fused_moe");
  EXPECT_EQ(events[0].kernel, "cpu::fused_moe_bf16");
  EXPECT_EQ(events[0].depth, 0);
  EXPECT_EQ(events[0].module_path, "model.layers.0.mlp.experts");
  const std::pair<const char*, const char*> chain[] = {{"moe_init_routing", "cpu::moe_init_routing_f32"},
                                                       {"grouped_matmul", "cpu::grouped_matmul_bf16"},  // gate
                                                       {"grouped_matmul", "cpu::grouped_matmul_bf16"},  // up
                                                       {"swiglu", "cpu::swiglu_f32"},
                                                       {"grouped_matmul", "cpu::grouped_matmul_bf16"},  // down
                                                       {"moe_token_unpermute", "cpu::moe_token_unpermute_f32"}};
  for (size_t i = 0; i < 6; ++i) {
    const TraceEvent& ev = events[i + 1];
    EXPECT_EQ(ev.key, chain[i].first) << i;
    EXPECT_EQ(ev.kernel, chain[i].second) << i;
    EXPECT_EQ(ev.vendor, "cpu") << i;
    EXPECT_EQ(ev.depth, 1) << ev.key;
    EXPECT_GE(ev.start_us, events[0].start_us);
    EXPECT_LE(ev.start_us + ev.dur_us, events[0].start_us + events[0].dur_us + 1e-3);
    // the registry holds the same kernel under the same name
    const KernelEntry* e =
        reg().find(*op_type_from_key(ev.key), kCpuVendor, ev.key == "grouped_matmul" ? DType::BF16 : DType::F32);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->kernel_name, ev.kernel);
  }
  EXPECT_NE(events[2].metadata, events[3].metadata) << "gate and up write different column offsets";
  // Untraced, the same result.
  Tensor again = Tensor::empty(DType::F32, {5, 64});
  cpu_kernel<OpType::FusedMoe>(DType::BF16).fn(FusedMoeArgs{p.hidden, p.experts.get(), p.weights, p.ids, again, &meta});
  EXPECT_TRUE(bit_equal(out, again));
}

}  // namespace
}  // namespace opchain::harness
