#pragma once
// The reference vendor: the plain, obviously-correct spec of every op (f32 accumulation, no
// threads, no tricks). Every other vendor is tested against it. One file per op; each file defines
// its kernels and a register function called by register_reference_kernels.
#include <cmath>

#include "ops/registry.h"

namespace opchain {

inline constexpr const char* kReferenceVendor = "reference";

void register_reference_kernels(Registry& reg);

namespace reference {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) void register_##key(Registry& reg);
OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X

// Row r, column c of a [rows, cols] float-typed (f32/f16/bf16) matrix, as f32.
inline float at(const Tensor& t, int64_t r, int64_t c) {
  return load_as_f32(t.raw(), t.dtype(), static_cast<size_t>(r * t.size(-1) + c));
}
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
// out[r, c] = silu(x[r, c]) * x[r, i + c]: shared by silu_and_mul and swiglu, which differ only in role.
inline void silu_and_mul_rows(const Tensor& x, const Tensor& out) {
  const int64_t i_size = out.size(-1), rows = out.numel() / i_size;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * 2 * i_size;
    for (int64_t c = 0; c < i_size; ++c) out.data<float>()[r * i_size + c] = silu(in[c]) * in[i_size + c];
  }
}
// transformers: variance in f32, x * rsqrt(var + eps), cast back to the input dtype, then * weight.
inline void rms_norm_row(const float* x, const Tensor& w, float eps, int64_t h, float* out) {
  float ss = 0.0f;
  for (int64_t c = 0; c < h; ++c) ss += x[c] * x[c];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + eps);
  for (int64_t c = 0; c < h; ++c) out[c] = x[c] * inv * load_as_f32(w.raw(), w.dtype(), static_cast<size_t>(c));
}

}  // namespace reference

}  // namespace opchain
