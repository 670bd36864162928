#pragma once
// Log-probabilities of sampled tokens, as OpenAI's `logprobs` / `top_logprobs` report them: the
// log-softmax of the logits the sampler saw (the model's raw row, before temperature, penalties and
// filters, as vLLM reports by default), for the chosen token and the most likely ones.
#include <cstdint>
#include <span>
#include <vector>

namespace opchain {

inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit for top_logprobs

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
};

struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first; equal logits in id order
};

// log_softmax(logits)[chosen] and the top_n largest entries (0 <= top_n <= kMaxTopLogprobs). The
// normaliser is summed in double, so a row's values do not depend on how many rows were computed with it.
StepLogprobs step_logprobs(std::span<const float> logits, int32_t chosen, int top_n);

}  // namespace opchain
