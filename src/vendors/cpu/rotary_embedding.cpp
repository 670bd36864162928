#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// cos/sin tables: angle = position * inv_freq[j] in f32, times attention_scaling.
static void rotary_embedding(const RotaryEmbeddingArgs& a) {
  const int64_t n = a.positions.numel(), half = a.inv_freq.numel();
  const float* inv_freq = a.inv_freq.data<float>();
  parallel_rows(n, 16 * half, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float pos = static_cast<float>(a.positions.data<int32_t>()[i]);
      float* cos = a.cos.data<float>() + i * half;
      float* sin = a.sin.data<float>() + i * half;
      for (int64_t j = 0; j < half; ++j) {
        const float angle = pos * inv_freq[j];
        cos[j] = std::cos(angle) * a.attention_scaling;
        sin[j] = std::sin(angle) * a.attention_scaling;
      }
    }
  });
}

void register_rotary_embedding(Registry& reg) {
  add_kernel<OpType::RotaryEmbedding>(reg, DType::F32, rotary_embedding);
}

}  // namespace opchain::cpu
