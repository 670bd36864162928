#include <vector>

#include "vendors/reference/quant_matmul.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// Quantised experts (Note [Quantised weights]): the same definition with each product a quant_dot;
// the down projection's input (silu(g) * u) is prepared like any activation row.
static void quant_fused_moe(const FusedMoeArgs& a) {
  const ExpertWeights& w = *a.experts;
  const int64_t n = a.hidden.size(0), h = a.hidden.size(1), k = a.topk_ids.size(1), inter = w.intermediate();
  std::vector<float> act(static_cast<size_t>(inter)), wrow;
  for (int64_t t = 0; t < n; ++t) {
    float* out = a.out.data<float>() + t * h;
    for (int64_t c = 0; c < h; ++c) out[c] = 0.0f;
    if (a.meta && !a.meta->x_active_mask.is_null() && a.meta->x_active_mask.data<uint8_t>()[t] == 0) continue;
    for (int64_t j = 0; j < k; ++j) {
      const size_t e = static_cast<size_t>(a.topk_ids.data<int32_t>()[t * k + j]);
      const float weight = a.topk_weights.data<float>()[t * k + j];
      const QuantActivation xg = prepare_activation(a.hidden.data<float>() + t * h, h, a.precision, *w.gate_q[e]);
      const QuantActivation xu = prepare_activation(a.hidden.data<float>() + t * h, h, a.precision, *w.up_q[e]);
      for (int64_t i = 0; i < inter; ++i)
        act[static_cast<size_t>(i)] =
            silu(quant_dot(xg, w.gate[e], *w.gate_q[e], i, wrow)) * quant_dot(xu, w.up[e], *w.up_q[e], i, wrow);
      const QuantActivation xd = prepare_activation(act.data(), inter, a.precision, *w.down_q[e]);
      for (int64_t c = 0; c < h; ++c) out[c] += weight * quant_dot(xd, w.down[e], *w.down_q[e], c, wrow);
    }
  }
}

// The MoE definition, token by token: no sorting, no grouping.
static void fused_moe(const FusedMoeArgs& a) {
  if (a.experts->quantized()) return quant_fused_moe(a);
  const ExpertWeights& w = *a.experts;
  const int64_t n = a.hidden.size(0), h = a.hidden.size(1), k = a.topk_ids.size(1), inter = w.intermediate();
  std::vector<float> act(static_cast<size_t>(inter)), xr(static_cast<size_t>(h));
  // Note [Matmul precision]: the gate/up inputs and the down input are what is rounded.
  const bool bf16_x = rounds_activations_to_bf16(a.precision, w.dtype());
  auto in = [&](float v) { return bf16_x ? round_to_bf16(v) : v; };
  for (int64_t t = 0; t < n; ++t) {
    float* out = a.out.data<float>() + t * h;
    for (int64_t c = 0; c < h; ++c) out[c] = 0.0f;
    if (a.meta && !a.meta->x_active_mask.is_null() && a.meta->x_active_mask.data<uint8_t>()[t] == 0) continue;
    for (int64_t c = 0; c < h; ++c) xr[static_cast<size_t>(c)] = in(a.hidden.data<float>()[t * h + c]);
    const float* x = xr.data();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = a.topk_ids.data<int32_t>()[t * k + j];
      const float weight = a.topk_weights.data<float>()[t * k + j];
      for (int64_t i = 0; i < inter; ++i) {
        float g = 0.0f, u = 0.0f;
        for (int64_t c = 0; c < h; ++c) {
          g += x[c] * at(w.gate[static_cast<size_t>(e)], i, c);
          u += x[c] * at(w.up[static_cast<size_t>(e)], i, c);
        }
        act[static_cast<size_t>(i)] = in(silu(g) * u);
      }
      for (int64_t c = 0; c < h; ++c) {
        float y = 0.0f;
        for (int64_t i = 0; i < inter; ++i) y += act[static_cast<size_t>(i)] * at(w.down[static_cast<size_t>(e)], c, i);
        out[c] += weight * y;
      }
    }
  }
}

void register_fused_moe(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    reg.add<OpType::FusedMoe>(kReferenceVendor, t, fused_moe, "reference::fused_moe");
}

}  // namespace opchain::reference
