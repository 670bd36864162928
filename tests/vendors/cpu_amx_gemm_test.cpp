// The Amx tier's bf16 matmul tile (src/vendors/cpu/amx_gemm.cpp, Note [AMX tier]) called directly
// against a double-precision sum of the same bf16 products, over shapes that cross every edge of its
// blocking (16-row groups, 32-wide k chunks, pairs and fours of groups), with NaN/Inf placed right past
// every row so a tail that reads one would show; then batch invariance (a row or weight row in any
// tile position gives the same bits) and thread-count determinism through linear.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/simd.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

bool amx_tier() { return cpu::isa_supported(cpu::Isa::Amx); }

constexpr uint16_t kBf16Nan = 0x7fc1, kBf16Inf = 0x7f80;
constexpr float kSentinel = -12345.0f;

// x [rows, ldx] f32, w [cols, ldw] bf16 (plus a trailing row of poison), out [rows, ldo]; everything
// past k in a row and past the last row is NaN or Inf.
struct Problem {
  int64_t rows, cols, k, ldx, ldw, ldo;
  std::vector<float> x, out;
  std::vector<uint16_t> w;

  Problem(std::mt19937& g, int64_t rows_, int64_t cols_, int64_t k_, int64_t pad)
      : rows(rows_), cols(cols_), k(k_), ldx(k_ + pad), ldw(k_ + pad), ldo(cols_ + 3) {
    std::uniform_real_distribution<float> ux(-1.0f, 1.0f), uw(-0.1f, 0.1f);
    x.assign(static_cast<size_t>(rows * ldx + 64), std::numeric_limits<float>::quiet_NaN());
    w.assign(static_cast<size_t>(cols * ldw + 64), kBf16Nan);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < k; ++i) x[r * ldx + i] = ux(g);
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t i = 0; i < k; ++i) w[c * ldw + i] = f32_to_bf16(uw(g));
      for (int64_t i = k; i < ldw; ++i) w[c * ldw + i] = (i % 2) ? kBf16Inf : kBf16Nan;
    }
    out.assign(static_cast<size_t>(rows * ldo), kSentinel);
  }

  cpu::GemmTile tile(int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* o, int64_t ld) const {
    cpu::GemmTile t;
    t.x = x.data() + r0 * ldx;
    t.ldx = ldx;
    t.w = w.data() + c0 * ldw;
    t.ldw = ldw;
    t.out = o;
    t.ldo = ld;
    t.rows = r1 - r0;
    t.cols = c1 - c0;
    t.k = k;
    return t;
  }
  void run() { cpu::amx_bf16_gemm_tile(tile(0, rows, 0, cols, out.data(), ldo)); }
};

// The products in double: within f32 accumulation error of the exact sum of the bf16 products.
void expect_matches_reference(const Problem& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t c = 0; c < p.cols; ++c) {
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < p.k; ++i) {
        const double prod = static_cast<double>(round_to_bf16(p.x[r * p.ldx + i])) * bf16_to_f32(p.w[c * p.ldw + i]);
        sum += prod;
        mag += std::fabs(prod);
      }
      const float got = p.out[r * p.ldo + c];
      ASSERT_TRUE(std::isfinite(got)) << "row " << r << " col " << c << ": a poisoned byte leaked in";
      ASSERT_LE(std::fabs(got - sum), 2e-6 * (static_cast<double>(p.k) / 32 + 32) * mag + 1e-30)
          << "row " << r << " col " << c << " got " << got << " want " << sum;
    }
    for (int64_t c = p.cols; c < p.ldo; ++c)
      ASSERT_EQ(p.out[r * p.ldo + c], kSentinel) << "wrote past the tile: row " << r << " col " << c;
  }
}

TEST(CpuAmxGemm, MatchesDoubleReferenceOverShapes) {
  if (!amx_tier()) {
    GTEST_SKIP() << "no AMX";
  }
  std::mt19937 g(1);
  const int64_t small_rows[] = {1, 2, 3, 15, 16, 17, 33, 64, 70};
  for (int64_t k : {1, 31, 32, 33, 100}) {
    for (int64_t rows : small_rows) {
      for (int64_t cols : {1, 5, 16, 17, 33, 47, 64, 100, 1100}) {
        for (int64_t pad : {0, 7}) {
          SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " k " + std::to_string(k) +
                       " pad " + std::to_string(pad));
          Problem p(g, rows, cols, k, pad);
          p.run();
          expect_matches_reference(p);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  for (int64_t rows = 1; rows <= 70; ++rows) {  // every row count, one k that has a tail
    SCOPED_TRACE("rows " + std::to_string(rows));
    Problem p(g, rows, 50, 33, 1);
    p.run();
    expect_matches_reference(p);
    if (HasFatalFailure()) return;
  }
  for (int64_t k : {2048, 2049}) {
    for (int64_t rows : {1, 3, 17, 64, 70}) {
      for (int64_t cols : {13, 100}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " k " + std::to_string(k));
        Problem p(g, rows, cols, k, k == 2048 ? 0 : 5);
        p.run();
        expect_matches_reference(p);
        if (HasFatalFailure()) return;
      }
    }
  }
  Problem wide(g, 3, 1100, 2049, 0);
  wide.run();
  expect_matches_reference(wide);
}

// Row r alone, or in any tile position of a batch of 64 (and weight row c in any position of its
// group), gives the same bits: each element is one C tile element over k in fixed chunks.
TEST(CpuAmxGemm, BatchInvariantInEveryTilePosition) {
  if (!amx_tier()) {
    GTEST_SKIP() << "no AMX";
  }
  std::mt19937 g(2);
  for (int64_t k : {33, 2048, 2049}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Problem p(g, 64, 200, k, 3);
    p.run();
    for (int64_t r : {0, 1, 15, 16, 17, 40, 63}) {
      for (int64_t n : {1, 2, 5}) {
        if (r + n > p.rows) continue;
        std::vector<float> part(static_cast<size_t>(n * p.ldo), kSentinel);
        cpu::amx_bf16_gemm_tile(p.tile(r, r + n, 0, p.cols, part.data(), p.ldo));
        ASSERT_EQ(std::memcmp(part.data(), p.out.data() + r * p.ldo, part.size() * sizeof(float)), 0)
            << "rows " << r << "+" << n;
      }
    }
    for (int64_t c0 : {1, 5, 16, 31}) {  // weight rows shifted to other places in their A tiles
      const int64_t c1 = std::min<int64_t>(p.cols, c0 + 70);
      std::vector<float> part(static_cast<size_t>(p.rows * p.ldo), kSentinel);
      cpu::amx_bf16_gemm_tile(p.tile(0, p.rows, c0, c1, part.data(), p.ldo));
      for (int64_t r = 0; r < p.rows; ++r)
        ASSERT_EQ(std::memcmp(part.data() + r * p.ldo, p.out.data() + r * p.ldo + c0,
                              static_cast<size_t>(c1 - c0) * sizeof(float)),
                  0)
            << "row " << r << ", columns from " << c0;
    }
  }
}

// Note [AMX panel gemm]: the panel path gives the tile's bits for every element, over shapes that cross
// its edges (16-row groups, pairs of weight groups, k blocks of 16 chunks and a last partial chunk,
// row counts that leave one group), with NaN/Inf past every row as above; and matches the double
// reference. Called directly, whatever gemm()'s thresholds: the panel holds all of the problem's rows
// (packed in two parts, as two threads would), the tile takes rows [r0, r1) (r0 a multiple of 16) and
// writes them from out on.
void run_panel(const Problem& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* out, int64_t ldo,
               const uint16_t* w = nullptr) {
  std::vector<uint16_t> buf;
  uint16_t* panel = cpu::scratch_aligned(buf, static_cast<size_t>(cpu::amx_bf16_panel_elems(p.rows, p.k)));
  const int64_t groups = (p.rows + 15) / 16;
  cpu::amx_bf16_pack_panel(p.x.data(), p.ldx, p.rows, p.k, 0, groups / 2, panel);
  cpu::amx_bf16_pack_panel(p.x.data(), p.ldx, p.rows, p.k, groups / 2, groups, panel);
  cpu::AmxPanelTile t;
  t.panel = panel;
  t.panel_rows = p.rows;
  t.row0 = r0;
  t.rows = r1 - r0;
  t.w = (w ? w : p.w.data()) + c0 * p.ldw;
  t.ldw = p.ldw;
  t.cols = c1 - c0;
  t.k = p.k;
  t.out = out;
  t.ldo = ldo;
  cpu::amx_bf16_gemm_panel(t);
}

TEST(CpuAmxGemm, PanelGivesTheTilesBits) {
  if (!amx_tier()) {
    GTEST_SKIP() << "no AMX";
  }
  std::mt19937 g(4);
  for (int64_t k : {1, 33, 512, 545, 1000}) {
    for (int64_t rows : {1, 15, 16, 17, 33, 48, 70}) {
      for (int64_t cols : {1, 16, 17, 40, 100}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " k " + std::to_string(k));
        Problem p(g, rows, cols, k, 5);
        p.run();
        std::vector<float> out(p.out.size(), kSentinel);
        run_panel(p, 0, rows, 0, cols, out.data(), p.ldo);
        ASSERT_EQ(std::memcmp(out.data(), p.out.data(), out.size() * sizeof(float)), 0);
        std::swap(p.out, out);
        expect_matches_reference(p);  // including: nothing written past the tile
        if (HasFatalFailure()) return;
      }
    }
  }
  for (int64_t k : {4096, 8200}) {  // tiles from a later 16-row group on, long k over several k blocks
    SCOPED_TRACE("k " + std::to_string(k));
    Problem p(g, 300, 70, k, 3);
    p.run();
    std::vector<float> out(p.out.size(), kSentinel);
    run_panel(p, 32, 100, 5, 70, out.data() + 32 * p.ldo, p.ldo);
    run_panel(p, 112, 300, 5, 70, out.data() + 112 * p.ldo, p.ldo);
    for (int64_t r = 32; r < 300; ++r) {
      if (r >= 100 && r < 112) continue;
      ASSERT_EQ(std::memcmp(out.data() + r * p.ldo, p.out.data() + r * p.ldo + 5, 65 * sizeof(float)), 0)
          << "row " << r;
    }
  }
  // Weights read in place (amx_panel_weights_in_place), from a 64-byte aligned copy: row strides whose
  // blocks spread over the L1 sets; the last, partial pair of groups and the k tail's block still copied.
  for (const auto& [k, pad] : {std::pair<int64_t, int64_t>{2560, 0}, {2600, 24}}) {
    SCOPED_TRACE("in place, k " + std::to_string(k));
    Problem p(g, 300, 70, k, pad);
    p.run();
    std::vector<uint16_t> w_buf;
    uint16_t* w = cpu::scratch_aligned(w_buf, p.w.size());
    std::memcpy(w, p.w.data(), p.w.size() * sizeof(uint16_t));
    ASSERT_TRUE(cpu::amx_panel_weights_in_place(w, p.ldw));
    std::vector<float> out(p.out.size(), kSentinel);
    run_panel(p, 0, 300, 5, 70, out.data(), p.ldo, w);
    for (int64_t r = 0; r < 300; ++r)
      ASSERT_EQ(std::memcmp(out.data() + r * p.ldo, p.out.data() + r * p.ldo + 5, 65 * sizeof(float)), 0)
          << "row " << r;
  }
  std::vector<uint16_t> w_buf;
  uint16_t* w = cpu::scratch_aligned(w_buf, 64 * 4096);
  EXPECT_FALSE(cpu::amx_panel_weights_in_place(w, 2048)) << "every row of the block in the same L1 sets";
  EXPECT_FALSE(cpu::amx_panel_weights_in_place(w + 1, 2560)) << "not 64-byte aligned";
}

// Through linear: a row alone (the tile) and among 300 rows of k 8200 (the panel: amx_panel_suits),
// for any thread count, the same bits.
TEST(CpuAmxGemm, LinearPanelAndTileAgreeForAnyThreadCount) {
  if (!amx_tier()) {
    GTEST_SKIP() << "no AMX";
  }
  ASSERT_TRUE(cpu::amx_panel_suits(300, 8200, 2100));
  ASSERT_FALSE(cpu::amx_panel_suits(1, 8200, 2100));
  const cpu::Isa before = cpu::active_isa();
  ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Amx));
  std::mt19937 g(5);
  // 2064 outputs: rows of out 64-byte aligned, so the panel streams its stores (non-temporal); 2100: not.
  for (const int64_t out_f : {int64_t{2100}, int64_t{2064}}) {
    SCOPED_TRACE(out_f);
    const int64_t rows = 300, in = 8200;
    Tensor x = rand_f32(g, {rows, in});
    Tensor w = rand_tensor(g, DType::BF16, {out_f, in}, -0.1f, 0.1f);
    Tensor bias = rand_tensor(g, DType::BF16, {out_f}, -1.0f, 1.0f);
    const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
    Tensor full = Tensor::empty(DType::F32, {rows, out_f});
    if (out_f % 16 == 0) {
      ASSERT_EQ(reinterpret_cast<uintptr_t>(full.raw()) % 64, 0u) << "the streamed stores need an aligned out";
    }
    k.fn(LinearArgs{x, w, bias, full, MatmulPrecision::Bf16});
    Tensor no_bias = Tensor::empty(DType::F32, {rows, out_f});
    k.fn(LinearArgs{x, w, Tensor{}, no_bias, MatmulPrecision::Bf16});
    EXPECT_NE(std::memcmp(no_bias.raw(), full.raw(), full.nbytes()), 0) << "the bias was not added";
    for (int64_t r : {0, 17, 255, 299}) {
      Tensor one = Tensor::empty(DType::F32, {1, out_f});
      k.fn(LinearArgs{x.slice_rows(r, r + 1), w, bias, one, MatmulPrecision::Bf16});
      EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
    }
    for (int threads : {1, 3}) {
      ThreadPool::set_global_threads(threads);
      Tensor again = Tensor::empty(DType::F32, {rows, out_f});
      k.fn(LinearArgs{x, w, bias, again, MatmulPrecision::Bf16});
      EXPECT_EQ(std::memcmp(again.raw(), full.raw(), full.nbytes()), 0) << threads << " threads";
    }
    ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
  cpu::set_active_isa(before);
}

// Through linear on the Amx tier (the gemm driver's decode and batch tilings): the same bits for a
// row alone or among 64, and for any thread count.
TEST(CpuAmxGemm, LinearBatchInvariantAndThreadDeterministic) {
  if (!amx_tier()) {
    GTEST_SKIP() << "no AMX";
  }
  const cpu::Isa before = cpu::active_isa();
  ASSERT_TRUE(cpu::set_active_isa(cpu::Isa::Amx));
  std::mt19937 g(3);
  const int64_t rows = 64, in = 2049, out_f = 1100;
  Tensor x = rand_f32(g, {rows, in});
  Tensor w = rand_tensor(g, DType::BF16, {out_f, in}, -0.1f, 0.1f);
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::BF16);
  Tensor full = Tensor::empty(DType::F32, {rows, out_f});
  k.fn(LinearArgs{x, w, Tensor{}, full, MatmulPrecision::Bf16});
  for (int64_t r : {0, 9, 31, 63}) {
    Tensor one = Tensor::empty(DType::F32, {1, out_f});
    k.fn(LinearArgs{x.slice_rows(r, r + 1), w, Tensor{}, one, MatmulPrecision::Bf16});
    EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
  }
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool::set_global_threads(threads);
    Tensor again = Tensor::empty(DType::F32, {rows, out_f});
    k.fn(LinearArgs{x, w, Tensor{}, again, MatmulPrecision::Bf16});
    EXPECT_EQ(std::memcmp(again.raw(), full.raw(), full.nbytes()), 0) << threads << " threads";
  }
  ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  cpu::set_active_isa(before);
}

}  // namespace
}  // namespace opchain::harness
