#include "server/openai_protocol.h"

#include <cmath>
#include <limits>
#include <new>

#include "engine/json_schema_grammar.h"
#include "engine/logprobs.h"
#include "engine/response_format.h"

namespace opchain::server {

using ojson = nlohmann::ordered_json;

ApiError::ApiError(int status, const std::string& message, std::string type, std::string param, std::string code)
    : Error(message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

nlohmann::json ApiError::body() const { return error_body(what(), type_, param_, code_); }

nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param,
                          const std::string& code) {
  nlohmann::json e{{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return nlohmann::json{{"error", std::move(e)}};
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message, const std::string& code = "") {
  throw ApiError(400, message, "invalid_request_error", param, code);
}

[[noreturn]] void unsupported(const std::string& param, const std::string& what) {
  bad(param, what + " is not supported by this server", "unsupported_parameter");
}

// nlohmann's DOM parser keeps one heap node per nesting level, so a body of a few MiB of '['
// would allocate hundreds of MiB before failing; no OpenAI request nests anywhere near this deep.
constexpr int kMaxJsonDepth = 64;

void check_nesting(std::string_view body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        bad("", "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", "invalid_json");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

const ojson* field(const ojson& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string type_name(const ojson& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

std::optional<double> number(const ojson& j, const char* key) {
  const ojson* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(key, std::string("'") + key + "' must be a number, got " + type_name(*v));
  const double d = v->get<double>();
  if (!std::isfinite(d)) bad(key, std::string("'") + key + "' must be finite");
  return d;
}

std::optional<int64_t> integer(const ojson& j, const char* key) {
  const ojson* v = field(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(key, std::string("'") + key + "' is out of range");
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (!v->is_number_integer()) bad(key, std::string("'") + key + "' must be an integer, got " + type_name(*v));
  return v->get<int64_t>();
}

std::optional<bool> boolean(const ojson& j, const char* key) {
  const ojson* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(key, std::string("'") + key + "' must be a boolean, got " + type_name(*v));
  return v->get<bool>();
}

void in_range(const char* key, double v, double lo, double hi, const char* range) {
  if (!(v >= lo && v <= hi)) bad(key, std::string("'") + key + "' must be " + range + ", got " + std::to_string(v));
}

// Chat content: a string, or OpenAI's list of parts of which only text can run on this server.
ojson normalise_content(const ojson& content, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content;
  if (!content.is_array())
    bad(param, "'" + param + "' must be a string or a list of content parts, got " + type_name(content));
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const ojson& part = content[k];
    const std::string pparam = param + "[" + std::to_string(k) + "]";
    if (!part.is_object()) bad(pparam, "'" + pparam + "' must be an object");
    const ojson* type = field(part, "type");
    if (!type || !type->is_string()) bad(pparam + ".type", "'" + pparam + ".type' must be a string");
    if (*type != "text") unsupported(pparam + ".type", "content part type '" + type->get<std::string>() + "'");
    const ojson* t = field(part, "text");
    if (!t || !t->is_string()) bad(pparam + ".text", "'" + pparam + ".text' must be a string");
    // vLLM joins text parts with newlines; a template expecting a string then sees all of them.
    if (k > 0) text += "\n";
    text += t->get<std::string>();
  }
  return text;
}

ojson parse_messages(const ojson& j) {
  const ojson* msgs = field(j, "messages");
  if (!msgs) bad("messages", "'messages' is required", "missing_required_parameter");
  if (!msgs->is_array()) bad("messages", "'messages' must be a list, got " + type_name(*msgs));
  if (msgs->empty()) bad("messages", "'messages' must not be empty");
  ojson out = ojson::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const ojson& m = (*msgs)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(param, "'" + param + "' must be an object, got " + type_name(m));
    const ojson* role = field(m, "role");
    if (!role || !role->is_string()) bad(param + ".role", "'" + param + ".role' must be a string");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool")
      bad(param + ".role",
          "'" + param + ".role' must be one of system, developer, user, assistant, tool; got '" + r + "'");
    ojson copy = m;
    const ojson* content = field(m, "content");
    if (content) {
      copy["content"] = normalise_content(*content, i);
    } else if (r == "assistant" && field(m, "tool_calls")) {
      // An assistant turn that only called tools: the official clients send it back with "content":
      // null. Templates search and index the content, so to them it is the empty string (as in vLLM).
      copy["content"] = "";
    } else {
      bad(param + ".content", "'" + param + ".content' is required");
    }
    out.push_back(std::move(copy));
  }
  return out;
}

std::vector<int32_t> parse_ids(const ojson& arr, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const auto& v : arr) {
    if (!v.is_number_integer()) bad(param, "'" + param + "' token ids must be integers");
    const int64_t id = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
                                              : v.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      bad(param, "'" + param + "' holds token id " + std::to_string(id) + ", outside the vocabulary");
    ids.push_back(static_cast<int32_t>(id));
  }
  if (ids.empty()) bad(param, "'" + param + "' must not be empty");
  return ids;
}

std::vector<PromptInput> parse_prompts(const ojson& j) {
  const ojson* p = field(j, "prompt");
  if (!p) bad("prompt", "'prompt' is required", "missing_required_parameter");
  std::vector<PromptInput> out;
  auto text = [&](const ojson& v, const std::string& param) {
    PromptInput in;
    in.text = v.get<std::string>();
    if (in.text.empty()) bad(param, "'" + param + "' must not be empty");
    out.push_back(std::move(in));
  };
  if (p->is_string()) {
    text(*p, "prompt");
  } else if (p->is_array()) {
    if (p->empty()) bad("prompt", "'prompt' must not be empty");
    if ((*p)[0].is_number()) {
      out.push_back(PromptInput{{}, parse_ids(*p, "prompt"), true});
    } else {
      for (size_t i = 0; i < p->size(); ++i) {
        const ojson& v = (*p)[i];
        const std::string param = "prompt[" + std::to_string(i) + "]";
        if (v.is_string())
          text(v, param);
        else if (v.is_array())
          out.push_back(PromptInput{{}, parse_ids(v, param), true});
        else
          bad(param, "'" + param + "' must be a string or a list of token ids, got " + type_name(v));
      }
    }
  } else {
    bad("prompt", "'prompt' must be a string, a list of strings or a list of token ids, got " + type_name(*p));
  }
  return out;
}

std::vector<std::string> parse_stop(const ojson& j, const ProtocolLimits& lim) {
  const ojson* s = field(j, "stop");
  if (!s) return {};
  std::vector<std::string> out;
  auto add = [&](const ojson& v) {
    if (!v.is_string()) bad("stop", "'stop' must be a string or a list of strings, got a list holding " + type_name(v));
    std::string str = v.get<std::string>();
    // An empty stop string would match before the first token; OpenAI ignores it too.
    if (str.empty()) return;
    if (str.size() > lim.max_stop_chars)
      bad("stop", "stop strings may be at most " + std::to_string(lim.max_stop_chars) + " bytes");
    out.push_back(std::move(str));
  };
  if (s->is_string())
    add(*s);
  else if (s->is_array())
    for (const auto& v : *s) add(v);
  else
    bad("stop", "'stop' must be a string or a list of strings, got " + type_name(*s));
  if (static_cast<int>(out.size()) > lim.max_stop)
    bad("stop",
        "at most " + std::to_string(lim.max_stop) + " stop strings are allowed, got " + std::to_string(out.size()));
  return out;
}

// Parameters this server cannot honour: refused with a 400 rather than dropped, so a client never
// believes it got log probabilities, JSON mode or a forced tool call that did not happen.
void refuse_unsupported(const ojson& j, Endpoint ep) {
  if (const ojson* v = field(j, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    unsupported("suffix", "'suffix'");
  if (const ojson* v = field(j, "logit_bias"); v && !(v->is_object() && v->empty()))
    unsupported("logit_bias", "'logit_bias'");
  if (auto min_tokens = integer(j, "min_tokens"); min_tokens && *min_tokens > 0)
    unsupported("min_tokens", "'min_tokens'");
}

// Chat: logprobs (a boolean) and top_logprobs (0..20, only with logprobs); completions: logprobs (an
// integer 0..20, or null) and echo. Echo with logprobs would need the prompt's log-probabilities,
// which the engine does not compute: refused rather than answered without them.
void parse_logprobs(const ojson& j, Endpoint ep, const ProtocolLimits& lim, ParsedRequest& r) {
  const std::string top_range = "between 0 and " + std::to_string(kMaxTopLogprobs);
  if (ep == Endpoint::Chat) {
    const bool on = boolean(j, "logprobs").value_or(false);
    std::optional<int64_t> top;
    if (field(j, "top_logprobs")) {
      top = integer(j, "top_logprobs");
      if (*top < 0 || *top > kMaxTopLogprobs)
        bad("top_logprobs", "'top_logprobs' must be " + top_range + ", got " + std::to_string(*top));
      if (!on && *top > 0) bad("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    }
    r.logprobs = on ? static_cast<int>(top.value_or(0)) : -1;
    if (r.logprobs >= 0 && !lim.serves_logprobs) unsupported("logprobs", "'logprobs'");
    return;
  }
  if (field(j, "logprobs")) {
    const int64_t n = *integer(j, "logprobs");
    if (n < 0 || n > kMaxTopLogprobs) bad("logprobs", "'logprobs' must be " + top_range + ", got " + std::to_string(n));
    r.logprobs = static_cast<int>(n);
  }
  if (r.logprobs >= 0 && !lim.serves_logprobs) unsupported("logprobs", "'logprobs'");
  r.echo = boolean(j, "echo").value_or(false);
  if (r.echo && !lim.serves_echo) unsupported("echo", "'echo'");
  if (r.echo && r.logprobs >= 0)
    unsupported("echo", "'echo' together with 'logprobs' (the prompt's log-probabilities are not computed)");
}

// tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name": ...}} naming one
// of the request's tools.
void parse_tool_choice(const ojson& j, ParsedRequest& r) {
  const ojson* v = field(j, "tool_choice");
  if (!v || v->is_null()) return;
  if (v->is_string()) {
    const std::string c = v->get<std::string>();
    if (c == "none")
      r.tool_choice = ToolChoiceMode::None;
    else if (c == "auto")
      r.tool_choice = ToolChoiceMode::Auto;
    else if (c == "required")
      r.tool_choice = ToolChoiceMode::Required;
    else
      bad("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function, got '" + c + "'");
  } else if (v->is_object()) {
    const ojson* type = field(*v, "type");
    const ojson* fn = field(*v, "function");
    const ojson* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
    if (!type || *type != "function" || !name || !name->is_string())
      bad("tool_choice", "a named 'tool_choice' must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    r.tool_choice = ToolChoiceMode::Named;
    r.tool_choice_name = name->get<std::string>();
  } else {
    bad("tool_choice", "'tool_choice' must be a string or an object, got " + type_name(*v));
  }
  if ((r.tool_choice == ToolChoiceMode::Required || r.tool_choice == ToolChoiceMode::Named) && r.tools.is_null())
    bad("tool_choice", "'tool_choice' " +
                           std::string(r.tool_choice == ToolChoiceMode::Named ? "naming a function" : "\"required\"") +
                           " needs 'tools'");
  if (r.tool_choice == ToolChoiceMode::Named) {
    bool found = false;
    for (const ojson& t : r.tools) {
      const ojson* f = t.is_object() ? field(t, "function") : nullptr;
      const ojson* n = f && f->is_object() ? field(*f, "name") : nullptr;
      found = found || (n && *n == r.tool_choice_name);
    }
    if (!found)
      bad("tool_choice", "'tool_choice' names function '" + r.tool_choice_name + "', which is not in 'tools'");
  }
}

// The parameters schema of one of the request's tools (an empty object schema when it has none).
ojson tool_parameters(const ojson& tools, const std::string& name) {
  for (const ojson& t : tools) {
    const ojson* f = t.is_object() ? field(t, "function") : nullptr;
    const ojson* n = f && f->is_object() ? field(*f, "name") : nullptr;
    if (n && *n == name) {
      const ojson* params = field(*f, "parameters");
      return params ? *params : ojson{{"type", "object"}};
    }
  }
  return ojson{{"type", "object"}};
}

// Structured output: response_format, or a tool_choice that forces a call, becomes the grammar the
// reply is decoded under (as vLLM does): a named function's arguments object, or for "required" a
// list of {"name", "parameters"} objects, one of the tools each.
void parse_constraints(const ojson& j, ParsedRequest& r) {
  const bool forced = r.tool_choice == ToolChoiceMode::Required || r.tool_choice == ToolChoiceMode::Named;
  if (const ojson* v = field(j, "response_format")) {
    const ojson* t = v->is_object() ? field(*v, "type") : nullptr;
    if (!t || !t->is_string()) bad("response_format", "'response_format' must be an object with a string 'type'");
    if (*t != "text" && forced)
      bad("response_format", "'response_format' cannot be combined with a tool_choice that forces a call");
    try {
      r.grammar = grammar_for_response_format(*v);
    } catch (const InvalidArgumentError& e) {
      bad("response_format", e.what());
    }
  }
  if (!forced) return;
  ojson schema;
  if (r.tool_choice == ToolChoiceMode::Named) {
    schema = tool_parameters(r.tools, r.tool_choice_name);
  } else {
    ojson any = ojson::array();
    for (const ojson& t : r.tools) {
      const ojson* f = t.is_object() ? field(t, "function") : nullptr;
      const ojson* n = f && f->is_object() ? field(*f, "name") : nullptr;
      if (!n || !n->is_string()) bad("tools", "every tool needs a 'function' with a string 'name'");
      any.push_back(
          {{"type", "object"},
           {"properties", {{"name", {{"const", *n}}}, {"parameters", tool_parameters(r.tools, n->get<std::string>())}}},
           {"required", {"name", "parameters"}}});
    }
    schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", any}}}};
  }
  // Compact JSON: the call is read by a program, not a person, and a model given room for layout
  // can spend its whole budget on it.
  JsonGrammarOptions compact;
  compact.max_whitespace = 1;
  try {
    r.grammar = compile_json_schema(schema, compact);
  } catch (const InvalidArgumentError& e) {
    bad("tools", std::string("the forced tool's parameters schema cannot be enforced: ") + e.what());
  }
}

}  // namespace

namespace {

ParsedRequest parse_checked_request(std::string_view body, Endpoint ep, const SamplingParams& defaults,
                                    const ProtocolLimits& lim) {
  check_nesting(body);
  ojson j;
  try {
    j = ojson::parse(body);
  } catch (const nlohmann::json::exception& e) {
    bad("", std::string("the request body is not valid JSON: ") + e.what(), "invalid_json");
  }
  if (!j.is_object())
    bad("", std::string("the request body must be a JSON object, got ") + type_name(j), "invalid_json");

  ParsedRequest r;
  r.endpoint = ep;
  if (const ojson* m = field(j, "model")) {
    if (!m->is_string()) bad("model", "'model' must be a string, got " + type_name(*m));
    r.model = m->get<std::string>();
    if (r.model != lim.served_model)
      throw ApiError(404, "The model '" + r.model + "' does not exist; this server serves '" + lim.served_model + "'",
                     "invalid_request_error", "model", "model_not_found");
  }

  if (ep == Endpoint::Chat) {
    r.messages = parse_messages(j);
    if (const ojson* t = field(j, "tools")) {
      if (!t->is_array()) bad("tools", "'tools' must be a list, got " + type_name(*t));
      if (!t->empty()) r.tools = *t;
    }
    if (const ojson* k = field(j, "chat_template_kwargs")) {
      if (!k->is_object())
        bad("chat_template_kwargs", "'chat_template_kwargs' must be an object, got " + type_name(*k));
      for (const char* reserved : {"messages", "tools", "add_generation_prompt"})
        if (k->contains(reserved))
          bad("chat_template_kwargs", std::string("'chat_template_kwargs' may not set '") + reserved + "'");
      r.chat_template_kwargs = *k;
    }
  } else {
    r.prompts = parse_prompts(j);
  }
  refuse_unsupported(j, ep);
  parse_logprobs(j, ep, lim, r);
  if (ep == Endpoint::Chat) parse_tool_choice(j, r);
  parse_constraints(j, r);

  // max_completion_tokens is OpenAI's newer name; when both are sent it is the one that counts.
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (auto v = integer(j, key)) {
      if (*v < 1) bad(key, std::string("'") + key + "' must be at least 1, got " + std::to_string(*v));
      if (lim.max_context > 0 && *v > lim.max_context)
        bad(key, std::string("'") + key + "' is " + std::to_string(*v) + " but the model's context is " +
                     std::to_string(lim.max_context) + " tokens");
      r.max_tokens = *v;
    }
  }

  if (auto n = integer(j, "n")) {
    if (*n < 1 || *n > lim.max_n)
      bad("n", "'n' must be between 1 and " + std::to_string(lim.max_n) + ", got " + std::to_string(*n));
    r.n = static_cast<int>(*n);
  }
  if (auto best_of = integer(j, "best_of"); best_of && *best_of != r.n)
    unsupported("best_of", "'best_of' other than n");
  const size_t prompts = ep == Endpoint::Chat ? 1 : r.prompts.size();
  if (prompts * static_cast<size_t>(r.n) > static_cast<size_t>(lim.max_sequences))
    bad(ep == Endpoint::Chat ? "n" : "prompt", "a request may ask for at most " + std::to_string(lim.max_sequences) +
                                                   " sequences (prompts x n), got " + std::to_string(prompts * r.n));

  r.stream = boolean(j, "stream").value_or(false);
  if (const ojson* so = field(j, "stream_options")) {
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!so->is_object()) bad("stream_options", "'stream_options' must be an object, got " + type_name(*so));
    if (const ojson* iu = field(*so, "include_usage")) {
      if (!iu->is_boolean()) bad("stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
      r.include_usage = iu->get<bool>();
    }
  }

  SamplingParams& s = r.sampling;
  s = defaults;
  if (auto v = number(j, "temperature")) {
    in_range("temperature", *v, 0.0, 2.0, "in [0, 2]");
    s.temperature = static_cast<float>(*v);
  }
  if (auto v = number(j, "top_p")) {
    if (!(*v > 0.0 && *v <= 1.0)) bad("top_p", "'top_p' must be in (0, 1], got " + std::to_string(*v));
    s.top_p = static_cast<float>(*v);
  }
  if (auto v = integer(j, "top_k")) {
    if (*v < -1 || *v > std::numeric_limits<int>::max())
      bad("top_k", "'top_k' must be -1 or 0 (disabled) or a positive integer, got " + std::to_string(*v));
    s.top_k = static_cast<int>(*v);
  }
  if (auto v = number(j, "min_p")) {
    in_range("min_p", *v, 0.0, 1.0, "in [0, 1]");
    s.min_p = static_cast<float>(*v);
  }
  if (auto v = number(j, "presence_penalty")) {
    in_range("presence_penalty", *v, -2.0, 2.0, "in [-2, 2]");
    s.presence_penalty = static_cast<float>(*v);
  }
  if (auto v = number(j, "frequency_penalty")) {
    in_range("frequency_penalty", *v, -2.0, 2.0, "in [-2, 2]");
    s.frequency_penalty = static_cast<float>(*v);
  }
  if (auto v = number(j, "repetition_penalty")) {
    if (!(*v > 0.0)) bad("repetition_penalty", "'repetition_penalty' must be > 0, got " + std::to_string(*v));
    s.repetition_penalty = static_cast<float>(*v);
  }
  if (const ojson* v = field(j, "seed")) {
    if (!v->is_number_integer()) bad("seed", "'seed' must be an integer, got " + type_name(*v));
    // OpenAI seeds are signed 64-bit; the sampler takes the same bits unsigned.
    s.seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
  }
  try {
    s.validate();  // a backstop for rules of the sampler that the checks above do not spell out
  } catch (const InvalidArgumentError& e) {
    bad("", e.what());
  }

  r.stop = parse_stop(j, lim);
  r.ignore_eos = boolean(j, "ignore_eos").value_or(false);
  r.skip_special_tokens = boolean(j, "skip_special_tokens").value_or(true);
  return r;
}

}  // namespace

ParsedRequest parse_request(std::string_view body, Endpoint ep, const SamplingParams& defaults,
                            const ProtocolLimits& lim) {
  // Whatever a body does, the client gets a 4xx naming the request, never a 500 "internal error".
  try {
    return parse_checked_request(body, ep, defaults, lim);
  } catch (const ApiError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw ApiError(413, "the request needs more memory than this server gives one request", "invalid_request_error", "",
                   "request_too_large");
  } catch (const std::exception& e) {
    bad("", std::string("the request body cannot be read: ") + e.what());
  }
}

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Aborted:
      return "abort";
    case FinishReason::None:
      break;
  }
  return nullptr;
}

nlohmann::json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

static nlohmann::json finish_json(FinishReason r) {
  const char* name = openai_finish_reason(r);
  return name ? nlohmann::json(name) : nlohmann::json(nullptr);
}

static nlohmann::json envelope(const ResponseMeta& meta, bool chunk) {
  const bool chat = meta.endpoint == Endpoint::Chat;
  return {{"id", meta.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", meta.created},
          {"model", meta.model}};
}

static nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, int first_index, bool streaming) {
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    nlohmann::json c{{"id", calls[i].id},
                     {"type", "function"},
                     {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streaming) c["index"] = first_index + static_cast<int>(i);
    arr.push_back(std::move(c));
  }
  return arr;
}

// "tool_calls" when a choice that called tools ended at a stop (OpenAI's finish reason for a tool turn).
static nlohmann::json finish_json(FinishReason r, bool called_tools) {
  if (called_tools && r == FinishReason::Stop) return "tool_calls";
  return finish_json(r);
}

nlohmann::json completion_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                   const Usage& usage) {
  nlohmann::json out = envelope(meta, false);
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& ch = choices[i];
    nlohmann::json c{{"index", i},
                     {"logprobs", ch.logprobs},
                     {"finish_reason", finish_json(ch.finish_reason, !ch.tool_calls.empty())}};
    if (meta.endpoint == Endpoint::Chat) {
      nlohmann::json msg{{"role", "assistant"}, {"content", ch.text}};
      if (!ch.tool_calls.empty()) {
        if (ch.text.empty()) msg["content"] = nullptr;
        msg["tool_calls"] = tool_calls_json(ch.tool_calls, 0, false);
      }
      if (ch.has_reasoning) msg["reasoning_content"] = ch.reasoning;
      c["message"] = std::move(msg);
    } else {
      c["text"] = ch.text;
    }
    arr.push_back(std::move(c));
  }
  out["choices"] = std::move(arr);
  out["usage"] = usage_json(usage);
  return out;
}

nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const std::string& text, bool role,
                            std::optional<FinishReason> finish, bool include_usage) {
  ChunkDelta d;
  d.content = text;
  return stream_chunk(meta, index, d, role, finish, false, include_usage);
}

nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const ChunkDelta& d, bool role,
                            std::optional<FinishReason> finish, bool called_tools, bool include_usage) {
  nlohmann::json out = envelope(meta, true);
  nlohmann::json c{{"index", index}, {"logprobs", d.logprobs}, {"finish_reason", nullptr}};
  if (finish) c["finish_reason"] = finish_json(*finish, called_tools);
  if (meta.endpoint == Endpoint::Chat) {
    nlohmann::json delta = nlohmann::json::object();
    if (role) delta["role"] = "assistant";
    if (role || !d.content.empty()) delta["content"] = d.content;
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.tool_calls.empty()) delta["tool_calls"] = tool_calls_json(d.tool_calls, d.first_tool_index, true);
    c["delta"] = std::move(delta);
  } else {
    c["text"] = d.content;
  }
  out["choices"] = nlohmann::json::array({std::move(c)});
  if (include_usage) out["usage"] = nullptr;
  return out;
}

nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  nlohmann::json out = envelope(meta, true);
  out["choices"] = nlohmann::json::array();
  out["usage"] = usage_json(usage);
  return out;
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string sse_event(const nlohmann::json& j) { return "data: " + dump(j) + "\n\n"; }

nlohmann::json model_object(const std::string& served_model, int64_t created, int64_t max_context) {
  return {{"id", served_model},
          {"object", "model"},
          {"created", created},
          {"owned_by", "opchain"},
          {"max_model_len", max_context}};
}

nlohmann::json models_response(const std::string& served_model, int64_t created, int64_t max_context) {
  return {{"object", "list"}, {"data", nlohmann::json::array({model_object(served_model, created, max_context)})}};
}

}  // namespace opchain::server
