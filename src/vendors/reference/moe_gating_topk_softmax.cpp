#include <algorithm>
#include <vector>

#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void moe_gating_topk_softmax(const MoeGatingTopkSoftmaxArgs& a) {
  const int64_t n = a.router_logits.size(0), e = a.router_logits.size(1), k = a.top_k;
  const int64_t groups = a.meta ? a.meta->router_n_groups : 0;
  const int64_t keep_groups = a.meta ? a.meta->router_topk_groups : 0;
  std::vector<float> prob(static_cast<size_t>(e));
  std::vector<int64_t> order(static_cast<size_t>(e));
  for (int64_t t = 0; t < n; ++t) {
    const float* logits = a.router_logits.data<float>() + t * e;
    const float mx = *std::max_element(logits, logits + e);
    float sum = 0.0f;
    for (int64_t i = 0; i < e; ++i) sum += (prob[static_cast<size_t>(i)] = std::exp(logits[i] - mx));
    for (auto& p : prob) p /= sum;
    std::vector<bool> allowed(static_cast<size_t>(e), true);
    if (groups > 0 && keep_groups > 0 && keep_groups < groups) {
      // Grouped routing: rank groups by their best expert, keep the top groups, mask the rest.
      const int64_t per = e / groups;
      std::vector<std::pair<float, int64_t>> gscore;
      for (int64_t g = 0; g < groups; ++g)
        gscore.push_back({*std::max_element(prob.begin() + g * per, prob.begin() + (g + 1) * per), g});
      std::stable_sort(gscore.begin(), gscore.end(), [](auto& x, auto& y) { return x.first > y.first; });
      std::fill(allowed.begin(), allowed.end(), false);
      for (int64_t gi = 0; gi < keep_groups; ++gi)
        for (int64_t i = 0; i < per; ++i)
          allowed[static_cast<size_t>(gscore[static_cast<size_t>(gi)].second * per + i)] = true;
    }
    for (int64_t i = 0; i < e; ++i) order[static_cast<size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      if (allowed[static_cast<size_t>(x)] != allowed[static_cast<size_t>(y)])
        return static_cast<bool>(allowed[static_cast<size_t>(x)]);
      return prob[static_cast<size_t>(x)] > prob[static_cast<size_t>(y)];
    });
    float chosen = 0.0f;
    for (int64_t j = 0; j < k; ++j) chosen += prob[static_cast<size_t>(order[static_cast<size_t>(j)])];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t id = order[static_cast<size_t>(j)];
      const float w = prob[static_cast<size_t>(id)];
      a.topk_ids.data<int32_t>()[t * k + j] = static_cast<int32_t>(id);
      a.topk_weights.data<float>()[t * k + j] = a.renormalize ? w / chosen : w;
    }
  }
}

void register_moe_gating_topk_softmax(Registry& reg) {
  reg.add<OpType::MoeGatingTopkSoftmax>(kReferenceVendor, DType::F32, moe_gating_topk_softmax,
                                        "reference::moe_gating_topk_softmax");
}

}  // namespace opchain::reference
