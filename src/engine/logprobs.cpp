#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace opchain {

StepLogprobs step_logprobs(std::span<const float> logits, int32_t chosen, int top_n) {
  float max = -std::numeric_limits<float>::infinity();
  for (float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z);
  };

  StepLogprobs out;
  out.chosen = {chosen, logprob(chosen)};
  const int n = std::clamp(top_n, 0, std::min<int>(kMaxTopLogprobs, static_cast<int>(logits.size())));
  if (n == 0) return out;
  // The n best ids in one pass: a small sorted list, better first (ties: the lower id).
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::vector<int32_t> best;
  best.reserve(static_cast<size_t>(n) + 1);
  for (int32_t id = 0; id < static_cast<int32_t>(logits.size()); ++id) {
    if (static_cast<int>(best.size()) == n && !better(id, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), id, better), id);
    if (static_cast<int>(best.size()) > n) best.pop_back();
  }
  out.top.reserve(best.size());
  for (int32_t id : best) out.top.push_back({id, logprob(id)});
  return out;
}

}  // namespace opchain
