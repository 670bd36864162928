#pragma once
// The spec of a matmul with a quantised weight (Note [Quantised weights], Note [Matmul precision]),
// shared by the reference kernels of linear, grouped_matmul and fused_moe: an activation row is
// prepared once as the precision says, then each output element is one quant_dot.
#include <vector>

#include "core/quant.h"
#include "ops/matmul_precision.h"

namespace opchain::reference {

struct QuantActivation {
  ActivationForm form = ActivationForm::F32;
  std::vector<float> values;  // F32 / Bf16: the (rounded) values; Fp8Group: the codes, decoded
  std::vector<int8_t> codes;  // Int8Token; Int8Group: in code-column order (input_order applied)
  std::vector<float> scales;  // Int8Token: one; Fp8Group, Int8Group: one per group
  int64_t group = 0;          // Fp8Group, Int8Group: channels per scale
};

QuantActivation prepare_activation(const float* x, int64_t in, MatmulPrecision p, const QuantParams& q);

// Output element `o`:
//   F32 / Bf16: sum_k values[k] * w[o, k], w dequantised exactly, summed in f32 in k order.
//   Int8Token (int8 channel weights): (sum_k codes[k] * (wcode[o, k] - zero[o]) in integers) * s_x * s_w[o].
//   Fp8Group (fp8 weights): sum over groups g of (sum_{k in g} x[k] * fp8(wcode[o, k]), in f32) * s_x[g] * s_w[o, g]
//   (per-channel fp8 weights: s_w[o]); the group is the weight's block, so each group has one weight scale.
//   Int8Group (int4 weights, contiguous groups): sum over groups g, in order, in f32, of
//   (float(sum_{k in g} codes[k] * wcode[o, k]) - zero[o, g] * float(sum_{k in g} codes[k])) * (s_x[g] * s_w[o, g]),
//   the sums in integers (exact in f32: |sums| < 2^24; zero[o, g] is an integer in every int4 format, 8
//   when absent, so the difference is exact too).
float quant_dot(const QuantActivation& a, const Tensor& codes, const QuantParams& q, int64_t o,
                std::vector<float>& wrow);

}  // namespace opchain::reference
