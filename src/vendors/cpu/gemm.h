#pragma once
// The matmul driver shared by linear and grouped_matmul: out = x @ w^T (+ bias) for one or more
// independent problems (one per expert), split over the pool's threads.
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace opchain::cpu {

struct GemmProblem {
  const float* x = nullptr;  // [rows, k], row stride ldx
  int64_t ldx = 0;
  int64_t rows = 0;
  const void* w = nullptr;  // [n, k] row-major, dtype wdtype
  DType wdtype = DType::F32;
  int64_t n = 0, k = 0;
  float* out = nullptr;  // [rows, n], row stride ldo
  int64_t ldo = 0;
  const void* bias = nullptr;  // [n] or null
  DType bias_dtype = DType::F32;
  bool bf16_activations = false;  // round x to bf16 first (Note [Matmul precision]); bf16 weights only
};

// Few rows (decode): each thread takes a contiguous range of output features for all rows. Many rows:
// tiles of rows x output features, ranges of tiles per thread balanced by cost. Every element is one
// fixed-order dot (Note [Fixed reduction order]), so the split never changes a result.
void gemm(const GemmProblem* problems, size_t count);

// Whether gemm() rounds bf16 activations itself (Note [Matmul precision]): where the CPU has no bf16 dot
// instruction, it rounds copies of x and runs the f32 kernels on them.
bool gemm_rounds_bf16_activations();

// out[r, :] = x[r, :] rounded to bf16 (nearest even), kept as f32, for `rows` rows of k; in parallel.
void round_rows_to_bf16(const float* x, int64_t ldx, int64_t rows, int64_t k, float* out);

}  // namespace opchain::cpu
