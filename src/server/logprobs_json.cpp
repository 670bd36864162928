#include "server/logprobs_json.h"

#include <cmath>
#include <string>

#include "io/tokenizer.h"

namespace opchain::server {

namespace {

double finite(float logprob) { return std::isfinite(logprob) ? static_cast<double>(logprob) : -9999.0; }

nlohmann::json bytes_json(const std::string& b) {
  nlohmann::json arr = nlohmann::json::array();
  for (unsigned char c : b) arr.push_back(static_cast<int>(c));
  return arr;
}

nlohmann::json chat_entry(const TokenLogprob& t, const Tokenizer& tok) {
  const std::string b = tok.token_bytes(t.id);
  return {{"token", b}, {"logprob", finite(t.logprob)}, {"bytes", bytes_json(b)}};
}

}  // namespace

nlohmann::json chat_logprobs_json(std::span<const StepLogprobs> steps, const Tokenizer& tokenizer) {
  nlohmann::json content = nlohmann::json::array();
  for (const StepLogprobs& s : steps) {
    nlohmann::json e = chat_entry(s.chosen, tokenizer);
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob& t : s.top) top.push_back(chat_entry(t, tokenizer));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return {{"content", std::move(content)}};
}

nlohmann::json completion_logprobs_json(std::span<const StepLogprobs> steps, const Tokenizer& tokenizer,
                                        size_t offset) {
  nlohmann::json tokens = nlohmann::json::array(), logprobs = nlohmann::json::array(), tops = nlohmann::json::array(),
                 offsets = nlohmann::json::array();
  for (const StepLogprobs& s : steps) {
    const std::string b = tokenizer.token_bytes(s.chosen.id);
    tokens.push_back(b);
    logprobs.push_back(finite(s.chosen.logprob));
    offsets.push_back(offset);
    offset += b.size();
    nlohmann::json top = nlohmann::json::object();
    for (const TokenLogprob& t : s.top) top[tokenizer.token_bytes(t.id)] = finite(t.logprob);
    tops.push_back(std::move(top));
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

}  // namespace opchain::server
