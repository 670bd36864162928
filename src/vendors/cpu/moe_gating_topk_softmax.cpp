#include <limits>

#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// Per token: softmax over all experts in f32, then top-k by selection in the order of reference's
// stable sort (allowed experts first, higher probability first, ties to the lower expert id); the
// grouped variant first keeps the router_topk_groups groups whose best expert scores highest.
static void moe_gating_topk_softmax(const MoeGatingTopkSoftmaxArgs& a) {
  const int64_t n = a.router_logits.size(0), e = a.router_logits.size(1), k = a.top_k;
  const int64_t groups = a.meta ? a.meta->router_n_groups : 0;
  const int64_t keep_groups = a.meta ? a.meta->router_topk_groups : 0;
  const bool grouped = groups > 0 && keep_groups > 0 && keep_groups < groups;
  parallel_rows(n, 8 * e + k * e, [&](int64_t b, int64_t end) {
    thread_local std::vector<float> prob_buf;
    thread_local std::vector<uint8_t> flag_buf;  // bit 0: allowed, bit 1: taken
    float* prob = scratch(prob_buf, static_cast<size_t>(e));
    uint8_t* flag = scratch(flag_buf, static_cast<size_t>(std::max(e, groups)));
    for (int64_t t = b; t < end; ++t) {
      const float* logits = a.router_logits.data<float>() + t * e;
      float mx = logits[0];
      for (int64_t i = 1; i < e; ++i) mx = std::max(mx, logits[i]);
      float sum = 0.0f;
      for (int64_t i = 0; i < e; ++i) sum += (prob[i] = std::exp(logits[i] - mx));
      for (int64_t i = 0; i < e; ++i) prob[i] /= sum;
      if (grouped) {
        const int64_t per = e / groups;
        std::fill(flag, flag + e, uint8_t{0});
        thread_local std::vector<float> gscore_buf;
        thread_local std::vector<uint8_t> gtaken_buf;
        float* gscore = scratch(gscore_buf, static_cast<size_t>(groups));
        uint8_t* gtaken = scratch(gtaken_buf, static_cast<size_t>(groups));
        for (int64_t g = 0; g < groups; ++g) {
          float best = prob[g * per];
          for (int64_t i = 1; i < per; ++i) best = std::max(best, prob[g * per + i]);
          gscore[g] = best;
          gtaken[g] = 0;
        }
        for (int64_t gi = 0; gi < keep_groups; ++gi) {
          int64_t pick = -1;
          for (int64_t g = 0; g < groups; ++g)
            if (!gtaken[g] && (pick < 0 || gscore[g] > gscore[pick])) pick = g;
          gtaken[pick] = 1;
          for (int64_t i = 0; i < per; ++i) flag[pick * per + i] = 1;
        }
      } else {
        std::fill(flag, flag + e, uint8_t{1});
      }
      int32_t* ids = a.topk_ids.data<int32_t>() + t * k;
      float* weights = a.topk_weights.data<float>() + t * k;
      float chosen = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        int64_t pick = -1;
        for (int64_t i = 0; i < e; ++i) {
          if (flag[i] & 2) continue;
          if (pick < 0) {
            pick = i;
            continue;
          }
          const bool ai = flag[i] & 1, ap = flag[pick] & 1;
          if (ai != ap ? ai : prob[i] > prob[pick]) pick = i;
        }
        flag[pick] |= 2;
        ids[j] = static_cast<int32_t>(pick);
        chosen += prob[pick];
      }
      for (int64_t j = 0; j < k; ++j) {
        const float w = prob[ids[j]];
        weights[j] = a.renormalize ? w / chosen : w;
      }
    }
  });
}

void register_moe_gating_topk_softmax(Registry& reg) {
  add_kernel<OpType::MoeGatingTopkSoftmax>(reg, DType::F32, moe_gating_topk_softmax);
}

}  // namespace opchain::cpu
