#pragma once
// Note [Matmul precision]
// What enters the dot products of linear, grouped_matmul and fused_moe. Part of each op's contract,
// so the reference vendor defines both and every vendor is checked against it in both:
//   F32  - activations enter in f32; a bf16 weight is widened exactly. The f32 reference numerics.
//   Bf16 - with bf16 weights, each activation is first rounded to bf16 (round to nearest even) and the
//          products are summed in f32: what a bf16 run of transformers or llama.cpp's bf16 path computes,
//          and what lets a CPU use its bf16 dot instructions (twice the math rate, half the bytes).
//          F32 and F16 weights ignore it. Every other op keeps its f32 numerics.
// A model is built with one precision (DeviceContext::matmul_precision); `--precision auto` picks Bf16
// for a bf16 checkpoint, as engines that run a checkpoint in its own dtype do.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace opchain {

enum class MatmulPrecision : uint8_t { F32, Bf16 };

inline std::string_view matmul_precision_name(MatmulPrecision p) { return p == MatmulPrecision::Bf16 ? "bf16" : "f32"; }

inline std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s) {
  if (s == "f32") return MatmulPrecision::F32;
  if (s == "bf16") return MatmulPrecision::Bf16;
  return std::nullopt;
}

// Whether activations are rounded to bf16 before a dot with weights of `weight_dtype`.
inline bool rounds_activations_to_bf16(MatmulPrecision p, DType weight_dtype) {
  return p == MatmulPrecision::Bf16 && weight_dtype == DType::BF16;
}

// x as the Bf16 precision sees it: rounded to bf16 (nearest even) and back.
inline float round_to_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

}  // namespace opchain
