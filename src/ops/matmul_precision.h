#pragma once
// Note [Matmul precision]
// What enters the dot products of linear, grouped_matmul and fused_moe. Part of each op's contract,
// so the reference vendor defines every precision and every vendor is checked against it in each:
//   F32       - activations enter in f32; a bf16 weight is widened exactly, a quantised one dequantised
//               exactly (Note [Quantised weights]). The f32 reference numerics.
//   Bf16      - with bf16 or quantised weights, each activation is first rounded to bf16 (round to
//               nearest even) and the products are summed in f32: what a bf16 run of transformers or
//               llama.cpp's bf16 path computes, and what lets a CPU use its bf16 dot instructions.
//               F32 and F16 weights ignore it. prefill_attention and paged_prefill_attention are
//               allowed, not required, to round q, k, v and the softmax weights to bf16 before their
//               two products (sums, maximum and denominator in f32): the online softmax rounds its
//               weights under a running maximum no other kernel shares, so the reference stays f32
//               and a vendor's rounding is checked against it at a bf16 tolerance (Note [AMX
//               attention]; the cpu vendor's other tiers stay f32). Decode attention and every other
//               op keep their f32 numerics.
//   Quantized - a quantised weight meets the activations its format names (QuantParams::act): dynamic
//               per-token int8 (W8A8), dynamic per-token-group fp8 (fp8 block checkpoints), or bf16 for
//               weight-only formats; dense weights and prefill attention compute as in Bf16.
//   Int8      - as Quantized, except that weight-only int4 weights (Int4Group with contiguous groups)
//               meet dynamic int8 activations per token and weight group (ActivationForm::Int8Group):
//               each group of group_size code columns is quantised as quantize_row_int8 quantises a
//               row (scale = amax / 127), the products summed exactly in integers per group, and
//               out = sum_g x_scale[g] * w_scale[g] * (sum_k xq * code - zero[g] * sum_k xq). The trade
//               llama.cpp makes for its Q4 formats (Q8 activations): integer dot instructions instead
//               of float ones, at the activations' int8 rounding. Opt-in (`--precision int8`); `auto`
//               never picks it.
// A model is built with one precision (DeviceContext::matmul_precision); `--precision auto` picks
// Quantized for a quantised checkpoint and Bf16 for a bf16 one, as engines that run a checkpoint in
// its own numerics do.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "core/quant.h"

namespace opchain {

enum class MatmulPrecision : uint8_t { F32, Bf16, Quantized, Int8 };

inline std::string_view matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Bf16:
      return "bf16";
    case MatmulPrecision::Quantized:
      return "quantized";
    case MatmulPrecision::Int8:
      return "int8";
    case MatmulPrecision::F32:
      break;
  }
  return "f32";
}

inline std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s) {
  if (s == "f32") return MatmulPrecision::F32;
  if (s == "bf16") return MatmulPrecision::Bf16;
  if (s == "quantized") return MatmulPrecision::Quantized;
  if (s == "int8") return MatmulPrecision::Int8;
  return std::nullopt;
}

inline bool is_quantized_dtype(DType t) { return t == DType::U8 || t == DType::I8 || t == DType::F8E4M3; }

// Whether activations are rounded to bf16 before a dot with weights of `weight_dtype` (for quantised
// weights: unless their format quantises the activations instead, see activation_form).
inline bool rounds_activations_to_bf16(MatmulPrecision p, DType weight_dtype) {
  return p != MatmulPrecision::F32 && (weight_dtype == DType::BF16 || is_quantized_dtype(weight_dtype));
}

// What the activations of a matmul with a quantised weight become.
// Int8Group: the Int8 precision's int4 activations (int8 codes and a scale per weight group).
enum class ActivationForm : uint8_t { F32, Bf16, Int8Token, Fp8Group, Int8Group };
inline ActivationForm activation_form(MatmulPrecision p, const QuantParams& q) {
  if (p == MatmulPrecision::F32) return ActivationForm::F32;
  const bool formats = p == MatmulPrecision::Quantized || p == MatmulPrecision::Int8;
  if (formats && q.act == ActQuant::Int8Token) return ActivationForm::Int8Token;
  if (formats && q.act == ActQuant::Fp8Group) return ActivationForm::Fp8Group;
  if (p == MatmulPrecision::Int8 && q.act == ActQuant::None && q.scheme == QuantScheme::Int4Group &&
      q.contiguous_groups())
    return ActivationForm::Int8Group;
  return ActivationForm::Bf16;
}

// x as the Bf16 precision sees it: rounded to bf16 (nearest even) and back.
inline float round_to_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

}  // namespace opchain
