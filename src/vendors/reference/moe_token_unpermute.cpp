#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void moe_token_unpermute(const MoeTokenUnpermuteArgs& a) {
  const int64_t n = a.topk_weights.size(0), k = a.topk_weights.size(1), h = a.out.size(1);
  for (int64_t t = 0; t < n; ++t) {
    float* out = a.out.data<float>() + t * h;
    for (int64_t c = 0; c < h; ++c) out[c] = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t row = a.pair_to_sorted.data<int32_t>()[t * k + j];
      if (row < 0) continue;
      const float w = a.topk_weights.data<float>()[t * k + j];
      for (int64_t c = 0; c < h; ++c) out[c] += w * a.expert_out.data<float>()[row * h + c];
    }
  }
}

void register_moe_token_unpermute(Registry& reg) {
  reg.add<OpType::MoeTokenUnpermute>(kReferenceVendor, DType::F32, moe_token_unpermute,
                                     "reference::moe_token_unpermute");
}

}  // namespace opchain::reference
