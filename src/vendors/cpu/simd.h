#pragma once
// The cpu vendor's SIMD inner loops, one implementation per ISA (simd_impl.inc), chosen at run time.
// Note [Fixed reduction order]: a dot product of length k is always computed the same way for a given
// ISA: lane l of one vector accumulator takes elements l, l + L, l + 2L, ... in order (the last partial
// vector zero-padded), then the L lanes are summed by one fixed tree. The matmul micro-kernels keep one
// such accumulator per output element, so an element's value does not depend on how many rows or
// columns its tile has, on the tiling, or on the thread that computes it.
#include <cstdint>

#include "core/dtype.h"
#include "vendors/cpu/cpu_kernels.h"

namespace opchain::cpu {

// out[r * ldo + c] = dot(x[r * ldx .. + k], w[c * ldw .. + k]) for r < rows, c < cols.
struct GemmTile {
  const float* x = nullptr;
  int64_t ldx = 0;
  const void* w = nullptr;  // f32 / bf16 / f16 rows, by the kernel chosen
  int64_t ldw = 0;
  float* out = nullptr;
  int64_t ldo = 0;
  int64_t rows = 0, cols = 0, k = 0;
};

// One decode query per sequence against kv heads [h0, h1) of its paged cache over kv positions [p0, p1)
// (p0 a multiple of kDecodeChunk): the span's online-softmax state, not yet normalised. Note [decode
// attention] (paged_decode_attention.cpp).
struct DecodeSpan {
  const float* q = nullptr;  // query rows of kv head h0 onwards: [(h1 - h0) * g, d]
  float scale = 1.0f;
  int64_t g = 0, d = 0;  // query heads per kv head, head dim
  int64_t h0 = 0, h1 = 0;
  const void* k = nullptr;  // caches [blocks, block_size, hk, d] of kv_dtype (f32 or bf16)
  const void* v = nullptr;
  DType kv_dtype = DType::F32;
  const int32_t* block_table = nullptr;   // the sequence's row
  int64_t block_size = 0, row_elems = 0;  // row_elems = hk * d: elements from one position to the next
  int64_t p0 = 0, p1 = 0;
  float* m = nullptr;    // [(h1 - h0) * g]: the largest scaled score of each query head (-inf if none)
  float* l = nullptr;    // [(h1 - h0) * g]: sum of exp(score - m)
  float* acc = nullptr;  // [(h1 - h0) * g, d]: sum of exp(score - m) * value
};
inline constexpr int64_t kDecodeChunk = 64;  // kv positions per online-softmax step

struct SimdKernels {
  Isa isa;
  void (*gemm_f32)(const GemmTile&);
  void (*gemm_bf16)(const GemmTile&);
  void (*gemm_f16)(const GemmTile&);
  float (*dot)(const float* a, const float* b, int64_t n);  // Note [Fixed reduction order]
  // out[r * ldo + c] = dot(x[r], w[c], k) for r < rows, c < cols; each element as dot() computes it.
  void (*dot_block)(const float* const* x, int64_t rows, const float* const* w, int64_t cols, int64_t k, float* out,
                    int64_t ldo);
  // y += sum_j a[j] * x[j] (j < n), each element updated in j order.
  void (*axpy_multi)(float* y, const float* a, const float* const* x, int64_t n, int64_t len);
  void (*scale)(float* y, float a, int64_t n);  // y *= a
  // e[j] = exp(s[j] - m) for j < n, all s[j] <= m (an online softmax's shifted scores), within 2 ulp.
  void (*exp_shifted)(const float* s, float m, float* e, int64_t n);
  // out[r * ldo + j] = sum_c q[r][c] * kt[c * w + j] (keys transposed; w a multiple of the lanes, <= 32),
  // one FMA chain per element in c order.
  void (*scores_block)(const float* const* q, int64_t rows, const float* kt, int64_t d, int64_t w, float* out,
                       int64_t ldo);
  // y[r] += sum_j a[r * lda + j] * x[j] for r < rows: axpy_multi (same bits) on rows sharing x.
  void (*axpy_rows)(float* const* y, int64_t rows, const float* a, int64_t lda, const float* const* x, int64_t n,
                    int64_t len);
  // out[i] = silu(x[i]) * y[i] (y null: silu(x[i])), exp within 2 ulp; out may alias x or y.
  void (*silu_mul)(const float* x, const float* y, float* out, int64_t n);
  // out[i] = x[i] * sigmoid(g[i]); out may alias x.
  void (*sigmoid_mul)(const float* g, const float* x, float* out, int64_t n);
  // One token of the gated delta rule on a row-major [dk, dv] state (cpu gated_delta_rule's walk):
  // S *= decay; delta = beta (v - S^T k); S += k delta^T; o = S^T q.
  void (*delta_rule_step)(float* s, int64_t dk, int64_t dv, const float* k, const float* v, const float* q, float decay,
                          float beta, float* o);
  // out[c] = silu(sum_j w[j][c] * u[j][c]) for c < n (a null u[j] adds nothing): a causal_conv1d row.
  void (*conv_silu_row)(const float* const* u, const float* const* w, int64_t taps, int64_t n, float* out);
  // kt[c * w + j] = element c of key row k[j] (f32 or bf16 by dtype) as f32 for j < n, zero for
  // n <= j < w, c < d (w a multiple of the lanes): a kv chunk's keys transposed for scores_block.
  void (*transpose_keys)(const void* const* k, DType dtype, int64_t n, int64_t d, float* kt, int64_t w);
  void (*widen_bf16)(const uint16_t* in, float* out, int64_t n);   // out[i] = in[i] as f32
  void (*widen_f8e4m3)(const uint8_t* in, float* out, int64_t n);  // out[i] = f8e4m3_to_f32(in[i])
  // out[i] = (in[i] - zero) * scale, rounded once as dequantize_row rounds an Int8Channel row.
  void (*dequantize_i8)(const int8_t* in, float zero, float scale, float* out, int64_t n);
  // s[j] *= a for j < n; returns max_j s[j] (-inf for n = 0): an online softmax's scaled chunk scores.
  float (*scale_max)(float* s, float a, int64_t n);
  // exp_shifted, returning sum_j e[j] in a fixed order for a given n (lanes, then vreduce's tree).
  float (*exp_shifted_sum)(const float* s, float m, float* e, int64_t n);
  // For r < rows: scale_max over row r's cnt[r] scores (s + r * lds, scaled by `factor`); where that
  // maximum exceeds m[r], l[r] and acc[r * d, +d) times exp(m[r] - max) and m[r] = max; then
  // l[r] += exp_shifted_sum(row, m[r], row, cnt[r]). The same bits as those steps row by row.
  void (*softmax_chunk_rows)(float* s, int64_t lds, int64_t rows, const int64_t* cnt, float factor, float* m, float* l,
                             float* acc, int64_t d);
  void (*decode_attention)(const DecodeSpan& span);  // Note [decode attention]
};

using GemmTileFn = void (*)(const GemmTile&);
// The bf16-weight tile for bf16 activations (Note [bf16 dot]), or null where the CPU or the active ISA
// cannot run it.
GemmTileFn bf16_dot_gemm();
// The Avx512Bf16 tier's bf16 tile in the given form (Note [bf16 dot forms]); null off x86.
GemmTileFn avx512_bf16_gemm_tile(Bf16DotForm form);
// The packed f32 tile (AVX-512F) walking k in Note [bf16 pair order] (simd_impl.inc): bf16 weights, f32
// x rounded to bf16 as it packs them; the bits of the FMA form's tile. Null off x86.
GemmTileFn bf16_pair_order_gemm_tile();

const SimdKernels& simd();             // of active_isa()
const SimdKernels* simd_for(Isa isa);  // null when not compiled in

}  // namespace opchain::cpu
