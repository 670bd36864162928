#pragma once
// `opchain generate`: one prompt streamed as it is generated, or a JSONL file of prompts run together
// through continuous batching, with the sampling, stop and structured-output settings of the request.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/model_session.h"

namespace opchain::tools {

struct GenerateOptions {
  EngineOptions engine;
  // Exactly one prompt source: text, comma-separated token ids, or a JSONL file whose lines are
  // {"prompt": ...} or {"prompt_ids": [...]}.
  std::string prompt, prompt_ids, prompts_file;
  int64_t max_new_tokens = 0;  // 0: generation_config's, else 256
  // Unset: the model's generation_config.json (or the sampler's default).
  std::optional<float> temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::string json_schema;   // a JSON Schema file the output must be valid under
  bool json_object = false;  // the output must be a JSON object
  bool chat = false;         // wrap each text prompt in the model's chat template
  bool no_thinking = false;  // with chat: enable_thinking=false
  bool json = false;         // one JSON result per prompt, in input order
  bool ignore_eos = false;
};

// Writes the text (streamed for one prompt without `json`) or the JSON results to `out`. Bad options
// and unreadable or malformed files throw InvalidArgumentError.
void run_generate(const GenerateOptions& o, std::ostream& out);

}  // namespace opchain::tools
