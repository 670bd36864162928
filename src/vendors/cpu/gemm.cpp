#include "vendors/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/matmul_precision.h"
#include "vendors/cpu/amx.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/isa_target.h"
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
  const uint16_t* panel = nullptr;  // the problem's packed activations: an AMX panel tile (amx.h)
};

void add_bias(const GemmProblem& p, const Item& it) {  // out = dot + bias, as reference adds it after the sum
  if (!p.bias) return;
  for (int64_t c = it.c0; c < it.c1; ++c) {
    const float b = load_as_f32(p.bias, p.bias_dtype, static_cast<size_t>(c));
    for (int64_t r = it.r0; r < it.r1; ++r) p.out[r * p.ldo + c] += b;
  }
}

void run_item(const SimdKernels& sk, GemmTileFn bf16_dot, const GemmProblem& p, const Item& it) {
#if OPCHAIN_CPU_X86
  if (it.panel) {
    AmxPanelTile t;
    t.panel = it.panel;
    t.panel_rows = p.rows;
    t.row0 = it.r0;  // a multiple of kAmxPanelRows
    t.rows = it.r1 - it.r0;
    t.w = static_cast<const uint16_t*>(p.w) + it.c0 * p.k;
    t.ldw = p.k;
    t.cols = it.c1 - it.c0;
    t.k = p.k;
    t.out = p.out + it.r0 * p.ldo + it.c0;
    t.ldo = p.ldo;
    amx_bf16_gemm_panel(t);
    add_bias(p, it);
    return;
  }
#endif
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
  if (p.bf16_activations && p.wdtype == DType::BF16) {  // Note [bf16 dot]; gemm() rounded x where !bf16_dot
    bf16_dot(t);
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
  add_bias(p, it);
}

// Note [AMX panel gemm] (amx.h): which problems take the panel tiles, their activations packed here
// once for all their tiles, in parallel. panel_of[i] is problem i's panel, or null.
void pack_amx_panels(const GemmProblem* problems, size_t count, GemmTileFn bf16_dot, std::vector<uint16_t*>& panel_of) {
  panel_of.assign(count, nullptr);
#if OPCHAIN_CPU_X86
  if (bf16_dot != &amx_bf16_gemm_tile) return;
  thread_local HugeScratch panel_buf;                 // huge pages: every column tile walks all of it (cpu_common.h)
  thread_local std::vector<int64_t> group_start_buf;  // first 16-row group of problem i over all panels
  std::vector<int64_t>& group_start = group_start_buf;
  group_start.assign(count + 1, 0);
  int64_t elems = 0, max_k = 0;
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem& p = problems[i];
    const bool panel = p.bf16_activations && p.wdtype == DType::BF16 && amx_panel_suits(p.rows, p.k, p.n);
    group_start[i + 1] = group_start[i] + (panel ? (p.rows + 15) / 16 : 0);
    if (!panel) continue;
    elems += amx_bf16_panel_elems(p.rows, p.k);
    max_k = std::max(max_k, p.k);
  }
  if (elems == 0) return;
  uint16_t* buf = static_cast<uint16_t*>(panel_buf.get(static_cast<size_t>(elems) * 2));
  for (size_t i = 0, off = 0; i < count; ++i) {
    if (group_start[i + 1] == group_start[i]) continue;
    panel_of[i] = buf + off;
    off += static_cast<size_t>(amx_bf16_panel_elems(problems[i].rows, problems[i].k));
  }
  parallel_rows(group_start[count], 16 * max_k, [&](int64_t g0, int64_t g1) {
    size_t i =
        static_cast<size_t>(std::upper_bound(group_start.begin(), group_start.end(), g0) - group_start.begin()) - 1;
    for (int64_t g = g0; g < g1;) {
      while (g >= group_start[i + 1]) ++i;
      const GemmProblem& p = problems[i];
      const int64_t end = std::min(g1, group_start[i + 1]);
      amx_bf16_pack_panel(p.x, p.ldx, p.rows, p.k, g - group_start[i], end - group_start[i], panel_of[i]);
      g = end;
    }
  });
#else
  (void)problems;
  (void)bf16_dot;
#endif
}

// round_to_bf16 without a branch, so the row loop below vectorises: the same value for every input
// (NaN becomes the quiet NaN f32_to_bf16 makes).
inline float round_to_bf16_lanes(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (b | 0x00400000u) & 0xffff0000u;
  b = (b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
  std::memcpy(&f, &b, 4);
  return f;
}

// Where the CPU has no bf16 dot instruction, bf16 activations (Note [Matmul precision]) go through the f32
// kernels on rounded copies of x: rounded here once per op, in parallel, not once per tile (a wide
// output has many column tiles per row tile, and each would round the same rows again). Returns the
// problems to run: `problems` itself, or copies whose x points at the rounded rows.
const GemmProblem* round_activations_once(const GemmProblem* problems, size_t count) {
  // The calling thread's scratch; the workers reach it through these references (a thread_local named
  // inside the lambda would be the worker's own, empty copy).
  thread_local std::vector<GemmProblem> rounded_problems;
  thread_local std::vector<float> rounded_x;
  thread_local std::vector<int64_t> row_start_buf;  // first row of problem i in the rounded buffer
  thread_local std::vector<float*> dst_buf;         // problem i's rounded rows, or null
  std::vector<int64_t>& row_start = row_start_buf;
  std::vector<float*>& dst = dst_buf;
  size_t total = 0;
  row_start.assign(count + 1, 0);
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem& p = problems[i];
    const bool rounds = p.bf16_activations && p.wdtype == DType::BF16 && p.rows > 0;
    row_start[i + 1] = row_start[i] + (rounds ? p.rows : 0);
    if (rounds) total += static_cast<size_t>(p.rows * p.k);
  }
  if (total == 0) return problems;
  float* buf = scratch_aligned(rounded_x, total);
  rounded_problems.assign(problems, problems + count);
  dst.assign(count, nullptr);
  size_t off = 0;
  for (size_t i = 0; i < count; ++i) {
    if (row_start[i + 1] == row_start[i]) continue;
    GemmProblem& p = rounded_problems[i];
    dst[i] = buf + off;
    off += static_cast<size_t>(p.rows * p.k);
  }
  const int64_t rows = row_start[count];
  parallel_rows(rows, problems[0].k, [&](int64_t r0, int64_t r1) {
    size_t i = static_cast<size_t>(std::upper_bound(row_start.begin(), row_start.end(), r0) - row_start.begin()) - 1;
    for (int64_t r = r0; r < r1; ++r) {
      while (r >= row_start[i + 1]) ++i;
      const GemmProblem& p = problems[i];
      const int64_t local = r - row_start[i];
      const float* src = p.x + local * p.ldx;
      float* out = dst[i] + local * p.k;
      for (int64_t c = 0; c < p.k; ++c) out[c] = round_to_bf16_lanes(src[c]);
    }
  });
  for (size_t i = 0; i < count; ++i) {
    if (!dst[i]) continue;
    GemmProblem& p = rounded_problems[i];
    p.x = dst[i];
    p.ldx = p.k;
    p.bf16_activations = false;  // rounded: the f32 kernels on bf16 weights from here
  }
  return rounded_problems.data();
}

}  // namespace

bool gemm_rounds_bf16_activations() { return bf16_dot_gemm() == nullptr; }

void round_rows_to_bf16(const float* x, int64_t ldx, int64_t rows, int64_t k, float* out) {
  parallel_rows(rows, k, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = x + r * ldx;
      float* dst = out + r * k;
      for (int64_t c = 0; c < k; ++c) dst[c] = round_to_bf16_lanes(src[c]);
    }
  });
}

void gemm(const GemmProblem* problems_in, size_t count) {
  const SimdKernels& sk = simd();
  const GemmTileFn bf16_dot = bf16_dot_gemm();  // Note [bf16 dot]
  const GemmProblem* problems = bf16_dot ? problems_in : round_activations_once(problems_in, count);
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
  thread_local std::vector<uint16_t*> panel_buf;
  std::vector<uint16_t*>& panel_of = panel_buf;
  pack_amx_panels(problems, count, bf16_dot, panel_of);
  items.clear();
  cost_before.clear();
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem& p = problems[i];
    if (p.rows <= 0 || p.n <= 0) continue;
#if OPCHAIN_CPU_X86
    if (panel_of[i]) {
      for (int64_t c0 = 0; c0 < p.n; c0 += kAmxPanelCols)
        for (int64_t r0 = 0; r0 < p.rows; r0 += kAmxPanelRows) {
          Item it{static_cast<uint32_t>(i), r0, std::min(r0 + kAmxPanelRows, p.rows), c0, 0};
          it.c1 = std::min(c0 + kAmxPanelCols, p.n);
          it.panel = panel_of[i];
          cost_before.push_back(total);
          total += (it.r1 - it.r0) * (it.c1 - it.c0) * (p.k + 8);
          items.push_back(it);
        }
      continue;
    }
#endif
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
