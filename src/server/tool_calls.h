#pragma once
// A model's tool-call markup, read back into OpenAI's `tool_calls`: what the chat template taught the
// model to write when it calls a function, recognised from the template itself.
//   Hermes (Qwen2.5 / Qwen3 / Hermes): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//   QwenXml (Qwen3-Coder / Qwen3.5):   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>
//                                      ...</function>\n</tool_call>
//   Llama3Json (Llama 3.1+):           the whole reply is {"name": ..., "parameters": {...}} (optionally
//                                      after <|python_tag|>), several separated by ';'
// Text outside the markup stays content. Markup that does not parse stays content too (as vLLM does), so
// nothing the model wrote is lost.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace opchain::server {

enum class ToolCallFormat { None, Hermes, QwenXml, Llama3Json };

// The format a chat template renders tool calls in (None: the template has no tool calls).
ToolCallFormat tool_call_format_of(std::string_view chat_template);
const char* tool_call_format_name(ToolCallFormat f);

struct ToolCall {
  std::string id;  // "call_" + 24 characters, unique within the server's lifetime
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI sends it
};

struct ToolCallParse {
  std::string content;  // the text outside the calls (empty when there was none)
  std::vector<ToolCall> calls;
};

// A fresh OpenAI-style call id.
std::string new_tool_call_id();

// The whole reply at once (non-streaming responses). `tools` (the request's list, may be null) gives
// QwenXml parameters their declared types: a parameter declared as a string stays a string, others
// are read as JSON where they parse.
ToolCallParse parse_tool_calls(std::string_view text, ToolCallFormat format, const nlohmann::ordered_json& tools);

// The same, fed as the reply streams. Content is passed on as soon as it cannot be the start of a call;
// a call is emitted whole once its markup closes (OpenAI's clients join a call's argument fragments,
// so one fragment holding all of them is a valid stream).
class ToolCallStream {
 public:
  ToolCallStream(ToolCallFormat format, nlohmann::ordered_json tools);

  struct Delta {
    std::string content;
    std::vector<ToolCall> calls;
  };
  Delta feed(std::string_view text);
  // The end of the reply: what was held back (an unclosed call stays content).
  Delta finish();
  // Whether any call was emitted (finish_reason becomes "tool_calls").
  bool called() const { return calls_emitted_ > 0; }

 private:
  Delta drain(bool final);

  ToolCallFormat format_;
  nlohmann::ordered_json tools_;
  std::string pending_;  // text not yet passed on
  size_t calls_emitted_ = 0;
  bool llama_candidate_ = true;  // Llama3Json: the reply may still be a call (it must start with one)
};

}  // namespace opchain::server
