#pragma once
// The OpenAI HTTP API as data: request bodies parsed and validated into what the engine needs,
// and the response, stream-chunk and error objects built from what it produced. Nothing here
// touches a socket, so every rule a client can trip over is unit-testable.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/compiled_grammar.h"
#include "engine/llm_engine.h"
#include "engine/sampler.h"
#include "server/tool_calls.h"

namespace opchain::server {

// A request the server refuses: the HTTP status and the fields of OpenAI's error object, so the
// official clients raise the matching exception (BadRequestError, AuthenticationError, ...).
class ApiError : public Error {
 public:
  ApiError(int status, const std::string& message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "");
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // {"error": {"message", "type", "param", "code"}}; an empty param/code is null.
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param = "",
                          const std::string& code = "");

enum class Endpoint { Chat, Completion };

struct ProtocolLimits {
  std::string served_model;
  int64_t max_context = 0;  // max_tokens above this is refused up front
  int max_n = 16;           // choices per prompt
  int max_sequences = 64;   // prompts x n in one request
  int max_stop = 16;        // stop strings
  size_t max_stop_chars = 256;
  // What the serving side fills in (the parser knows them all; a server that cannot answer with them
  // refuses them rather than dropping them).
  bool serves_logprobs = false, serves_echo = false;
};

// One completions prompt: text to tokenize, or token ids the client already has.
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

enum class ToolChoiceMode { Auto, None, Required, Named };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;                // as sent (empty: not sent)
  nlohmann::ordered_json messages;  // chat: content parts already joined into strings
  nlohmann::ordered_json tools;     // chat: null when none
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  std::vector<PromptInput> prompts;   // completions: one or more
  std::optional<int64_t> max_tokens;  // max_completion_tokens wins over max_tokens
  SamplingParams sampling;            // the model's defaults overlaid with the request
  std::vector<std::string> stop;
  int n = 1;
  bool stream = false;
  bool include_usage = false;                         // stream_options.include_usage
  bool ignore_eos = false;                            // vLLM extension
  bool skip_special_tokens = true;                    // vLLM extension
  ToolChoiceMode tool_choice = ToolChoiceMode::Auto;  // chat
  std::string tool_choice_name;                       // ToolChoiceMode::Named: one of `tools`
  int logprobs = -1;                                  // GenerationRequest::logprobs (chat: top_logprobs when logprobs)
  bool echo = false;                                  // completions: the prompt's text before the completion
  // The grammar the reply is decoded under (response_format, or a tool_choice that forces a call), or null.
  std::shared_ptr<const CompiledGrammar> grammar;
};

// Parses and validates a request body. Throws ApiError (400 for malformed JSON, wrong types and
// out-of-range values, 404 for a model other than the served one) naming the offending field.
ParsedRequest parse_request(std::string_view body, Endpoint endpoint, const SamplingParams& defaults,
                            const ProtocolLimits& limits);

// "stop" / "length"; an aborted sequence reports "abort" (as vLLM does).
const char* openai_finish_reason(FinishReason r);

struct ChoiceResult {
  std::string text;  // chat: the content (without reasoning and tool-call markup)
  FinishReason finish_reason = FinishReason::None;
  std::string reasoning;  // chat with a thinking template: message.reasoning_content
  bool has_reasoning = false;
  std::vector<ToolCall> tool_calls;  // chat: finish_reason "tool_calls" when it stopped after them
  nlohmann::json logprobs;           // null, or the endpoint's logprobs object (server/logprobs_json.h)
};

// What one streaming chunk adds to a choice.
struct ChunkDelta {
  std::string content, reasoning;
  std::vector<ToolCall> tool_calls;  // whole calls, numbered from first_tool_index within the choice
  int first_tool_index = 0;
  nlohmann::json logprobs;  // null, or the endpoint's logprobs object for the chunk's tokens
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

struct ResponseMeta {
  Endpoint endpoint = Endpoint::Chat;
  std::string id;       // chatcmpl-... / cmpl-...
  int64_t created = 0;  // unix seconds
  std::string model;
};

nlohmann::json usage_json(const Usage& u);
// The whole non-streaming response.
nlohmann::json completion_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                   const Usage& usage);
// One streaming chunk for one choice. Chat: `role` set puts the role into the delta (the first
// chunk of a choice); `finish` set ends the choice with an empty delta plus finish_reason.
// include_usage: the chunk carries "usage": null, as OpenAI does once usage was asked for.
nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const std::string& text, bool role,
                            std::optional<FinishReason> finish, bool include_usage);
// The same with reasoning, tool calls and logprobs. `called_tools`: the choice made tool calls, so a
// finish by a stop reports "tool_calls".
nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const ChunkDelta& delta, bool role,
                            std::optional<FinishReason> finish, bool called_tools, bool include_usage);
// The chunk after the last choice finished when stream_options.include_usage: no choices, usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);
// One server-sent event: "data: <json>\n\n" (invalid UTF-8 from a model is replaced, not thrown).
std::string sse_event(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// JSON text for an HTTP body; invalid UTF-8 replaced.
std::string dump(const nlohmann::json& j);

nlohmann::json models_response(const std::string& served_model, int64_t created, int64_t max_context);
nlohmann::json model_object(const std::string& served_model, int64_t created, int64_t max_context);

}  // namespace opchain::server
