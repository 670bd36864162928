#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// out[i] = weight[ids[i]] as f32 (exact); an id outside the vocabulary reads nothing (zeros).
static void embedding(const EmbeddingArgs& a) {
  const int64_t n = a.ids.numel(), h = a.weight.size(1), vocab = a.weight.size(0);
  const size_t row_bytes = static_cast<size_t>(h) * dtype_size(a.weight.dtype());
  parallel_rows(n, h, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t id = a.ids.data<int32_t>()[i];
      float* out = a.out.data<float>() + i * h;
      if (id < 0 || id >= vocab) {
        std::fill(out, out + h, 0.0f);
        continue;
      }
      row_to_f32(static_cast<const char*>(a.weight.raw()) + static_cast<size_t>(id) * row_bytes, a.weight.dtype(), out,
                 h);
    }
  });
}

void register_embedding(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::Embedding>(reg, t, embedding);
}

}  // namespace opchain::cpu
