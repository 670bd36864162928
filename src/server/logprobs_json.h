#pragma once
// The engine's token log-probabilities as OpenAI's logprobs objects, one shape per endpoint:
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}
//   completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{token: logprob}], "text_offset": [...]}
// A token's text is its bytes (a byte-level BPE token may hold part of a character: the JSON writer
// replaces what is not UTF-8, and "bytes" keeps the exact value). -inf, which JSON cannot hold, is
// written as -9999.0, as vLLM does.
#include <cstddef>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/logprobs.h"

namespace opchain {
class Tokenizer;
}

namespace opchain::server {

nlohmann::json chat_logprobs_json(std::span<const StepLogprobs> steps, const Tokenizer& tokenizer);
// text_offset counts from `offset`: the bytes of the choice's text before these tokens.
nlohmann::json completion_logprobs_json(std::span<const StepLogprobs> steps, const Tokenizer& tokenizer, size_t offset);

}  // namespace opchain::server
