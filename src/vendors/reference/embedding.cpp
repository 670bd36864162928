#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void embedding(const EmbeddingArgs& a) {
  const int64_t n = a.ids.numel(), h = a.weight.size(1), vocab = a.weight.size(0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = a.ids.data<int32_t>()[i];
    float* out = a.out.data<float>() + i * h;
    if (id < 0 || id >= vocab) {  // the model checks ids before the step; a bad id reads nothing
      for (int64_t c = 0; c < h; ++c) out[c] = 0.0f;
      continue;
    }
    for (int64_t c = 0; c < h; ++c) out[c] = at(a.weight, id, c);
  }
}

void register_embedding(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::Embedding>(kReferenceVendor, t, embedding, "reference::embedding");
}

}  // namespace opchain::reference
