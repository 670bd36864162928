#include "server/choice_assembler.h"

#include "io/tokenizer.h"
#include "server/logprobs_json.h"

namespace opchain::server {

ChoiceOptions choice_options(const ParsedRequest& request, const std::string& chat_template_source,
                             const std::string& rendered_prompt, const Tokenizer& tokenizer) {
  ChoiceOptions o;
  o.endpoint = request.endpoint;
  o.logprobs = request.logprobs >= 0;
  o.tokenizer = &tokenizer;
  if (request.endpoint == Endpoint::Chat) {
    if (request.tool_choice == ToolChoiceMode::Required || request.tool_choice == ToolChoiceMode::Named) {
      o.forced = request.tool_choice;
      o.forced_name = request.tool_choice_name;
      return o;  // the grammar decodes the call from the first token: no markup, no think block
    }
    if (!request.tools.is_null() && request.tool_choice != ToolChoiceMode::None) {
      o.tool_format = tool_call_format_of(chat_template_source);
      o.tools = request.tools;
    }
    // Under a grammar (response_format) the reply is the constrained text from its first token.
    o.reasoning = !request.grammar && template_has_reasoning(chat_template_source);
    o.think_opened_by_prompt = o.reasoning && prompt_opens_think(rendered_prompt);
  } else if (request.echo) {
    o.echo = rendered_prompt;
  }
  return o;
}

namespace {

// The arrays of one endpoint's logprobs object, appended in place.
void append_logprobs(nlohmann::json& into, const nlohmann::json& more) {
  if (more.is_null()) return;
  if (into.is_null()) {
    into = more;
    return;
  }
  for (auto& [key, value] : more.items())
    if (value.is_array())
      for (const auto& e : value) into[key].push_back(e);
}

}  // namespace

void append_delta(ChunkDelta& into, const ChunkDelta& more) {
  if (into.tool_calls.empty()) into.first_tool_index = more.first_tool_index;
  into.content += more.content;
  into.reasoning += more.reasoning;
  into.tool_calls.insert(into.tool_calls.end(), more.tool_calls.begin(), more.tool_calls.end());
  append_logprobs(into.logprobs, more.logprobs);
}

ChoiceAssembler::ChoiceAssembler(ChoiceOptions options) : opt_(std::move(options)) {
  if (opt_.reasoning) reasoning_.emplace(opt_.think_opened_by_prompt);
  if (opt_.tool_format != ToolCallFormat::None) calls_.emplace(opt_.tool_format, opt_.tools);
}

nlohmann::json ChoiceAssembler::logprobs_json(std::span<const StepLogprobs> steps) {
  if (!opt_.logprobs || !opt_.tokenizer) return nullptr;
  if (opt_.endpoint == Endpoint::Chat) return chat_logprobs_json(steps, *opt_.tokenizer);
  nlohmann::json j = completion_logprobs_json(steps, *opt_.tokenizer, text_bytes_);
  for (const StepLogprobs& s : steps) text_bytes_ += opt_.tokenizer->token_bytes(s.chosen.id).size();
  return j;
}

// A forced call's JSON as calls: Named, the arguments object of that function; Required, a list of
// {"name", "parameters"}. False when the text is not that (a reply cut short by max_tokens).
static bool forced_calls(const ChoiceOptions& opt, const std::string& text, std::vector<ToolCall>& calls) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return false;
  if (opt.forced == ToolChoiceMode::Named) {
    if (!j.is_object()) return false;
    calls.push_back({new_tool_call_id(), opt.forced_name, j.dump()});
    return true;
  }
  if (!j.is_array() || j.empty()) return false;
  for (const auto& c : j) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("parameters")) return false;
    calls.push_back({new_tool_call_id(), c["name"].get<std::string>(), c["parameters"].dump()});
  }
  return true;
}

ChunkDelta ChoiceAssembler::split(std::string_view text, bool final) {
  ChunkDelta d;
  if (opt_.forced != ToolChoiceMode::Auto) {
    forced_text_.append(text);
    if (!final) return d;
    if (forced_calls(opt_, forced_text_, d.tool_calls)) {
      d.first_tool_index = tool_calls_;
      tool_calls_ += static_cast<int>(d.tool_calls.size());
    } else {
      d.content = std::move(forced_text_);  // not a whole call: the text as it is
    }
    forced_text_.clear();
    return d;
  }
  std::string content(text);
  if (reasoning_) {
    ReasoningStream::Delta r = reasoning_->feed(text);
    if (final) {
      ReasoningStream::Delta tail = reasoning_->finish();
      r.reasoning += tail.reasoning;
      r.content += tail.content;
    }
    d.reasoning = std::move(r.reasoning);
    content = std::move(r.content);
  }
  if (calls_) {  // the content (outside any think block) is where calls are written
    ToolCallStream::Delta c = calls_->feed(content);
    if (final) {
      ToolCallStream::Delta tail = calls_->finish();
      c.content += tail.content;
      for (ToolCall& t : tail.calls) c.calls.push_back(std::move(t));
    }
    d.first_tool_index = tool_calls_;
    tool_calls_ += static_cast<int>(c.calls.size());
    d.tool_calls = std::move(c.calls);
    content = std::move(c.content);
  }
  d.content = std::move(content);
  return d;
}

ChunkDelta ChoiceAssembler::add(std::string_view text, std::span<const StepLogprobs> logprobs) {
  ChunkDelta d = split(text, false);
  if (!echo_sent_ && !opt_.echo.empty()) {
    d.content = opt_.echo + d.content;
    text_bytes_ += opt_.echo.size();
  }
  echo_sent_ = true;
  if (!logprobs.empty()) d.logprobs = logprobs_json(logprobs);
  whole_.text += d.content;
  whole_.reasoning += d.reasoning;
  for (const ToolCall& c : d.tool_calls) whole_.tool_calls.push_back(c);
  append_logprobs(whole_.logprobs, d.logprobs);
  return d;
}

ChunkDelta ChoiceAssembler::finish() {
  ChunkDelta d = split("", true);
  if (!echo_sent_ && !opt_.echo.empty()) d.content = opt_.echo + d.content;
  echo_sent_ = true;
  whole_.text += d.content;
  whole_.reasoning += d.reasoning;
  for (const ToolCall& c : d.tool_calls) whole_.tool_calls.push_back(c);
  return d;
}

ChoiceResult ChoiceAssembler::result(FinishReason reason) const {
  ChoiceResult r = whole_;
  r.finish_reason = reason;
  r.has_reasoning = reasoning_.has_value() && (opt_.think_opened_by_prompt || !whole_.reasoning.empty());
  if (!r.tool_calls.empty() && r.text.find_first_not_of(" \t\r\n") == std::string::npos) r.text.clear();
  if (opt_.logprobs && r.logprobs.is_null())  // no token carried text (e.g. the reply was only a stop token)
    r.logprobs = opt_.endpoint == Endpoint::Chat ? nlohmann::json{{"content", nlohmann::json::array()}}
                                                 : nlohmann::json{{"tokens", nlohmann::json::array()},
                                                                  {"token_logprobs", nlohmann::json::array()},
                                                                  {"top_logprobs", nlohmann::json::array()},
                                                                  {"text_offset", nlohmann::json::array()}};
  return r;
}

}  // namespace opchain::server
