#include "vendors/reference/quant_matmul.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void grouped_matmul(const GroupedMatmulArgs& a) {
  const int64_t experts = a.expert_offsets.numel() - 1, kin = a.x.size(1), ld = a.out.size(1);
  std::vector<float> wrow;
  for (int64_t e = 0; e < experts; ++e) {
    const Tensor& w = (*a.weights)[static_cast<size_t>(e)];
    if (a.quant) {  // Note [Quantised weights]
      const QuantParams& q = *(*a.quant)[static_cast<size_t>(e)];
      for (int64_t r = a.expert_offsets.data<int32_t>()[e]; r < a.expert_offsets.data<int32_t>()[e + 1]; ++r) {
        const QuantActivation act = prepare_activation(a.x.data<float>() + r * kin, kin, a.precision, q);
        for (int64_t o = 0; o < w.size(0); ++o)
          a.out.data<float>()[r * ld + a.out_col_offset + o] = quant_dot(act, w, q, o, wrow);
      }
      continue;
    }
    const int64_t nout = w.size(0);
    const bool bf16_x = rounds_activations_to_bf16(a.precision, w.dtype());  // Note [Matmul precision]
    for (int64_t r = a.expert_offsets.data<int32_t>()[e]; r < a.expert_offsets.data<int32_t>()[e + 1]; ++r) {
      for (int64_t o = 0; o < nout; ++o) {
        float acc = 0.0f;
        for (int64_t c = 0; c < kin; ++c) {
          const float x = a.x.data<float>()[r * kin + c];
          acc += (bf16_x ? round_to_bf16(x) : x) * at(w, o, c);
        }
        a.out.data<float>()[r * ld + a.out_col_offset + o] = acc;
      }
    }
  }
}

void register_grouped_matmul(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    reg.add<OpType::GroupedMatmul>(kReferenceVendor, t, grouped_matmul, "reference::grouped_matmul");
}

}  // namespace opchain::reference
