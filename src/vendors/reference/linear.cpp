#include "vendors/reference/quant_matmul.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// A quantised weight: each row of x prepared once (quant_matmul.h), one quant_dot per output.
static void quant_linear(const LinearArgs& a) {
  const QuantParams& q = *a.quant;
  const int64_t in = q.in_features, n = a.x.numel() / in, out_f = a.weight.size(0);
  std::vector<float> wrow;
  for (int64_t i = 0; i < n; ++i) {
    const QuantActivation act = prepare_activation(a.x.data<float>() + i * in, in, a.precision, q);
    for (int64_t o = 0; o < out_f; ++o) {
      float acc = quant_dot(act, a.weight, q, o, wrow);
      if (!a.bias.is_null()) acc += load_as_f32(a.bias.raw(), a.bias.dtype(), static_cast<size_t>(o));
      a.out.data<float>()[i * out_f + o] = acc;
    }
  }
}

static void linear(const LinearArgs& a) {
  if (a.quant) return quant_linear(a);
  const int64_t n = a.x.numel() / a.x.size(-1), in = a.weight.size(1), out_f = a.weight.size(0);
  const bool bf16_x = rounds_activations_to_bf16(a.precision, a.weight.dtype());  // Note [Matmul precision]
  for (int64_t i = 0; i < n; ++i) {
    const float* x = a.x.data<float>() + i * in;
    for (int64_t o = 0; o < out_f; ++o) {
      float acc = 0.0f;
      for (int64_t c = 0; c < in; ++c) acc += (bf16_x ? round_to_bf16(x[c]) : x[c]) * at(a.weight, o, c);
      if (!a.bias.is_null()) acc += load_as_f32(a.bias.raw(), a.bias.dtype(), static_cast<size_t>(o));
      a.out.data<float>()[i * out_f + o] = acc;
    }
  }
}

void register_linear(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    reg.add<OpType::Linear>(kReferenceVendor, t, linear, "reference::linear");
}

}  // namespace opchain::reference
