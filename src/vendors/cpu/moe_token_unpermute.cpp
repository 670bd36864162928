#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// out[t] = sum_j topk_weights[t, j] * expert_out[pair_to_sorted[t*k + j]], in j order; -1 pairs add nothing.
void moe_token_unpermute(const MoeTokenUnpermuteArgs& a) {
  const int64_t n = a.topk_weights.size(0), k = a.topk_weights.size(1), h = a.out.size(1);
  parallel_rows(n, 2 * k * h, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* out = a.out.data<float>() + t * h;
      std::fill(out, out + h, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t row = a.pair_to_sorted.data<int32_t>()[t * k + j];
        if (row < 0) continue;
        const float w = a.topk_weights.data<float>()[t * k + j];
        const float* src = a.expert_out.data<float>() + row * h;
        for (int64_t c = 0; c < h; ++c) out[c] += w * src[c];
      }
    }
  });
}

void register_moe_token_unpermute(Registry& reg) {
  add_kernel<OpType::MoeTokenUnpermute>(reg, DType::F32, moe_token_unpermute);
}

}  // namespace opchain::cpu
