#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void rotary_embedding(const RotaryEmbeddingArgs& a) {
  const int64_t n = a.positions.numel(), half = a.inv_freq.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float pos = static_cast<float>(a.positions.data<int32_t>()[i]);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = pos * a.inv_freq.data<float>()[j];
      a.cos.data<float>()[i * half + j] = std::cos(angle) * a.attention_scaling;
      a.sin.data<float>()[i * half + j] = std::sin(angle) * a.attention_scaling;
    }
  }
}

void register_rotary_embedding(Registry& reg) {
  reg.add<OpType::RotaryEmbedding>(kReferenceVendor, DType::F32, rotary_embedding, "reference::rotary_embedding");
}

}  // namespace opchain::reference
