#include "vendors/cpu/gemm.h"

#include <vector>

#include "ops/matmul_precision.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

// Rows per tile: a tile's weight rows (kColTile of them) stay in L1/L2 while its rows pass over them.
constexpr int64_t kRowTile = 64;
// Output features per tile: a multiple of 16 floats, so threads' output ranges do not share cache lines;
// wide, so a packed tile (simd_impl.inc) packs its rows once for many weight rows.
constexpr int64_t kMaxColTile = 1024;
constexpr int64_t kMinColTile = 16;

struct Item {
  uint32_t problem;
  int64_t r0, r1, c0, c1;
};

void run_item(const SimdKernels& sk, GemmTileFn bf16_dot, const GemmProblem& p, const Item& it) {
  GemmTile t;
  t.x = p.x + it.r0 * p.ldx;
  t.ldx = p.ldx;
  t.w = static_cast<const char*>(p.w) + static_cast<size_t>(it.c0 * p.k) * dtype_size(p.wdtype);
  t.ldw = p.k;
  t.out = p.out + it.r0 * p.ldo + it.c0;
  t.ldo = p.ldo;
  t.rows = it.r1 - it.r0;
  t.cols = it.c1 - it.c0;
  t.k = p.k;
  if (p.bf16_activations && p.wdtype == DType::BF16) {  // Note [bf16 dot]
    if (bf16_dot) {
      bf16_dot(t);
    } else {  // round the tile's rows, then the f32 kernel: each row's values do not depend on the tile
      thread_local std::vector<float> rounded;
      float* xr = scratch_aligned(rounded, static_cast<size_t>(t.rows * t.k));
      for (int64_t r = 0; r < t.rows; ++r)
        for (int64_t c = 0; c < t.k; ++c) xr[r * t.k + c] = round_to_bf16(t.x[r * t.ldx + c]);
      t.x = xr;
      t.ldx = t.k;
      sk.gemm_bf16(t);
    }
  } else
    switch (p.wdtype) {
      case DType::BF16:
        sk.gemm_bf16(t);
        break;
      case DType::F16:
        sk.gemm_f16(t);
        break;
      default:
        sk.gemm_f32(t);
        break;
    }
  if (p.bias) {  // out = dot + bias, as reference adds it after the sum
    for (int64_t c = it.c0; c < it.c1; ++c) {
      const float b = load_as_f32(p.bias, p.bias_dtype, static_cast<size_t>(c));
      for (int64_t r = it.r0; r < it.r1; ++r) p.out[r * p.ldo + c] += b;
    }
  }
}

}  // namespace

void gemm(const GemmProblem* problems, size_t count) {
  const SimdKernels& sk = simd();
  const GemmTileFn bf16_dot = bf16_dot_gemm();  // Note [bf16 dot]
  const int threads = ThreadPool::global().num_threads();

  // Column tile: the largest that still gives every thread several tiles to balance.
  auto tiles_with = [&](int64_t col_tile) {
    int64_t n = 0;
    for (size_t i = 0; i < count; ++i) {
      const GemmProblem& p = problems[i];
      if (p.rows <= 0 || p.n <= 0) continue;
      n += ((p.rows + kRowTile - 1) / kRowTile) * ((p.n + col_tile - 1) / col_tile);
    }
    return n;
  };
  int64_t col_tile = kMaxColTile;
  while (col_tile > kMinColTile && tiles_with(col_tile) < 4 * threads) col_tile /= 2;

  // Scratch of the calling thread; the workers reach it through these references (a thread_local
  // named inside the lambda would be the worker's own, empty copy).
  thread_local std::vector<Item> items_buf;
  thread_local std::vector<int64_t> cost_buf;
  std::vector<Item>& items = items_buf;
  std::vector<int64_t>& cost_before = cost_buf;  // prefix sums of item cost
  items.clear();
  cost_before.clear();
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem& p = problems[i];
    if (p.rows <= 0 || p.n <= 0) continue;
    // Column-tile major: a thread's consecutive tiles share weight rows.
    for (int64_t c0 = 0; c0 < p.n; c0 += col_tile) {
      for (int64_t r0 = 0; r0 < p.rows; r0 += kRowTile) {
        const Item it{static_cast<uint32_t>(i), r0, std::min(r0 + kRowTile, p.rows), c0, std::min(c0 + col_tile, p.n)};
        cost_before.push_back(total);
        total += (it.r1 - it.r0) * (it.c1 - it.c0) * (p.k + 8);
        items.push_back(it);
      }
    }
  }
  auto run = [&](size_t i) { run_item(sk, bf16_dot, problems[items[i].problem], items[i]); };
  parallel_dynamic(items.size(), total, run);
}

}  // namespace opchain::cpu
