#pragma once
// The cpu vendor's matmul with a quantised weight (Note [Quantised weights]): out = x @ w^T (+ bias)
// for one or more problems (one per expert), in the activation form the precision names. Shared by
// linear, grouped_matmul and fused_moe.
#include <cstddef>
#include <cstdint>

#include "core/quant.h"
#include "ops/matmul_precision.h"

namespace opchain::cpu {

struct QuantGemmProblem {
  const float* x = nullptr;  // [rows, in], row stride ldx
  int64_t ldx = 0;
  int64_t rows = 0;
  const Tensor* codes = nullptr;  // the weight's codes, [n, ...]
  const QuantParams* q = nullptr;
  int64_t n = 0;         // output features
  float* out = nullptr;  // [rows, n], row stride ldo
  int64_t ldo = 0;
  const void* bias = nullptr;  // [n] or null
  DType bias_dtype = DType::F32;
};

void quant_gemm(const QuantGemmProblem* problems, size_t count, MatmulPrecision precision);

}  // namespace opchain::cpu
