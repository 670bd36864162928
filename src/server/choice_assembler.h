#pragma once
// One choice of a response, assembled from the engine's stream events whatever the HTTP layer: the
// reply's text goes through the reasoning split (thinking templates) and the tool-call reader (chat
// with tools), and the tokens' log-probabilities become the endpoint's logprobs objects. A streaming
// answer sends what add() returns as it comes; a whole answer takes result() at the end. Both see the
// same split, so a streamed choice joins up to the non-streamed one.
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_protocol.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace opchain {
class Tokenizer;
}

namespace opchain::server {

struct ChoiceOptions {
  Endpoint endpoint = Endpoint::Chat;
  ToolCallFormat tool_format = ToolCallFormat::None;  // None: tool calls are not read back (no tools, tool_choice none)
  nlohmann::ordered_json tools;                       // the request's tools (types for QwenXml parameters)
  bool reasoning = false;                             // the chat template thinks (template_has_reasoning)
  bool think_opened_by_prompt = false;                // prompt_opens_think of the rendered prompt
  // A tool_choice that forces a call: the reply is the call itself, decoded under a grammar (Named:
  // the function's arguments object; Required: a list of {"name", "parameters"}), read back whole.
  ToolChoiceMode forced = ToolChoiceMode::Auto;
  std::string forced_name;
  bool logprobs = false;
  const Tokenizer* tokenizer = nullptr;  // needed with logprobs
  std::string echo;                      // completions with echo: the prompt's text, sent first
};

// How a request's choices are read back: from the model's chat template and the parsed request.
ChoiceOptions choice_options(const ParsedRequest& request, const std::string& chat_template_source,
                             const std::string& rendered_prompt, const Tokenizer& tokenizer);

// Joins a later delta of the same choice onto an earlier one (a stream sends them as one chunk).
void append_delta(ChunkDelta& into, const ChunkDelta& more);

class ChoiceAssembler {
 public:
  explicit ChoiceAssembler(ChoiceOptions options);

  // One event's text and the log-probabilities of its tokens: what a stream sends for them now.
  ChunkDelta add(std::string_view text, std::span<const StepLogprobs> logprobs);
  // The end of the choice: what was held back.
  ChunkDelta finish();
  bool called_tools() const { return tool_calls_ > 0; }
  // The whole choice (after finish()).
  ChoiceResult result(FinishReason reason) const;

 private:
  ChunkDelta split(std::string_view text, bool final);
  nlohmann::json logprobs_json(std::span<const StepLogprobs> steps);

  ChoiceOptions opt_;
  std::optional<ReasoningStream> reasoning_;
  std::optional<ToolCallStream> calls_;
  bool echo_sent_ = false;
  size_t text_bytes_ = 0;  // completions: text before the next tokens (logprobs text_offset)
  int tool_calls_ = 0;
  std::string forced_text_;  // a forced call's JSON, held until the reply ends
  ChoiceResult whole_;       // everything sent so far
};

}  // namespace opchain::server
