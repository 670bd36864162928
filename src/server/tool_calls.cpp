#include "server/tool_calls.h"

#include <atomic>
#include <chrono>
#include <random>

namespace opchain::server {

using ojson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string_view rtrim(std::string_view s) {
  const size_t e = s.find_last_not_of(" \t\r\n");
  return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}

bool blank(std::string_view s) { return trim(s).empty(); }

// The length of the longest suffix of `s` that is a proper prefix of `tag`: text that may still become
// the tag once more arrives, so a stream holds it back.
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

// {"name": ..., "arguments" | "parameters": {...} | "..."} as a call; false when it is not one.
bool call_from_json(const ojson& j, ToolCall& call) {
  if (!j.is_object()) return false;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  std::string arguments = "{}";
  if (args != j.end()) {
    if (args->is_string())
      arguments = args->get<std::string>();  // already JSON text (some models write it so)
    else if (args->is_object())
      arguments = args->dump();
    else
      return false;
  }
  call.id = new_tool_call_id();
  call.name = name->get<std::string>();
  call.arguments = std::move(arguments);
  return true;
}

bool parse_json(std::string_view text, ojson& out) {
  out = ojson::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return !out.is_discarded();
}

// The JSON-schema type a tool declares for one parameter ("" when unknown).
std::string declared_type(const ojson& tools, const std::string& function, const std::string& parameter) {
  if (!tools.is_array()) return "";
  for (const ojson& t : tools) {
    const ojson* f = t.is_object() && t.contains("function") ? &t["function"] : nullptr;
    if (!f || !f->is_object() || f->value("name", ojson()).get<std::string>() != function) continue;
    const ojson params = f->value("parameters", ojson::object());
    if (!params.is_object() || !params.contains("properties") || !params["properties"].is_object()) return "";
    const ojson& props = params["properties"];
    if (!props.contains(parameter) || !props[parameter].is_object()) return "";
    const ojson type = props[parameter].value("type", ojson());
    return type.is_string() ? type.get<std::string>() : "";
  }
  return "";
}

// One QwenXml call body: <function=NAME> (<parameter=KEY>VALUE</parameter>)* </function>.
bool call_from_xml(std::string_view body, const ojson& tools, ToolCall& call) {
  body = trim(body);
  constexpr std::string_view kFn = "<function=", kFnEnd = "</function>",
                             kParam = "<parameter=", kParamEnd = "</parameter>";
  if (body.substr(0, kFn.size()) != kFn) return false;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return false;
  const std::string name(trim(body.substr(kFn.size(), name_end - kFn.size())));
  if (name.empty()) return false;
  std::string_view rest = body.substr(name_end + 1);
  const size_t fn_end = rest.rfind(kFnEnd);
  if (fn_end != std::string_view::npos) rest = rest.substr(0, fn_end);  // an unclosed function still reads
  ojson args = ojson::object();
  for (size_t at = rest.find(kParam); at != std::string_view::npos; at = rest.find(kParam, at)) {
    const size_t key_end = rest.find('>', at);
    if (key_end == std::string_view::npos) return false;
    const std::string key(trim(rest.substr(at + kParam.size(), key_end - at - kParam.size())));
    size_t value_end = rest.find(kParamEnd, key_end);
    const size_t next = rest.find(kParam, key_end);
    if (value_end == std::string_view::npos || (next != std::string_view::npos && next < value_end)) value_end = next;
    std::string_view value =
        rest.substr(key_end + 1, (value_end == std::string_view::npos ? rest.size() : value_end) - key_end - 1);
    if (!value.empty() && value.front() == '\n')
      value.remove_prefix(1);  // the template writes the value on its own line
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    const std::string type = declared_type(tools, name, key);
    ojson parsed;
    if (type != "string" && parse_json(value, parsed))
      args[key] = parsed;
    else
      args[key] = std::string(value);
    if (value_end == std::string_view::npos) break;
    at = value_end;
  }
  call.id = new_tool_call_id();
  call.name = name;
  call.arguments = args.dump();
  return true;
}

// One <tool_call> block's inside as a call.
bool parse_block(std::string_view inside, ToolCallFormat format, const ojson& tools, ToolCall& call) {
  if (format == ToolCallFormat::QwenXml && contains(inside, "<function=")) return call_from_xml(inside, tools, call);
  ojson j;
  return parse_json(trim(inside), j) && call_from_json(j, call);  // Qwen3.5 models sometimes write Hermes JSON too
}

// Llama 3: the whole reply is one call or several separated by ';'.
bool parse_llama(std::string_view text, std::vector<ToolCall>& calls) {
  std::string_view t = trim(text);
  if (t.substr(0, kPythonTag.size()) == kPythonTag) t = trim(t.substr(kPythonTag.size()));
  if (t.empty() || t.front() != '{') return false;
  ojson whole;
  if (parse_json(t, whole)) {
    ToolCall c;
    if (!call_from_json(whole, c)) return false;
    calls.push_back(std::move(c));
    return true;
  }
  // "{...}; {...}": split at the ';' between objects (a ';' inside a string leaves a part that does not parse).
  size_t start = 0;
  while (start < t.size()) {
    size_t end = start;
    ojson part;
    bool ok = false;
    for (size_t semi = t.find(';', start);; semi = t.find(';', semi + 1)) {
      end = semi == std::string_view::npos ? t.size() : semi;
      if (parse_json(trim(t.substr(start, end - start)), part)) {
        ok = true;
        break;
      }
      if (semi == std::string_view::npos) break;
    }
    ToolCall c;
    if (!ok || !call_from_json(part, c)) return false;
    calls.push_back(std::move(c));
    start = end + 1;
  }
  return !calls.empty();
}

}  // namespace

ToolCallFormat tool_call_format_of(std::string_view chat_template) {
  if (contains(chat_template, kOpen))
    return contains(chat_template, "<function=") ? ToolCallFormat::QwenXml : ToolCallFormat::Hermes;
  if (contains(chat_template, "<|start_header_id|>") && contains(chat_template, "\"parameters\": "))
    return ToolCallFormat::Llama3Json;
  return ToolCallFormat::None;
}

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::None:
      return "none";
    case ToolCallFormat::Hermes:
      return "hermes";
    case ToolCallFormat::QwenXml:
      return "qwen3_xml";
    case ToolCallFormat::Llama3Json:
      return "llama3_json";
  }
  return "?";
}

std::string new_tool_call_id() {
  // A per-process random base and a counter: unique in this server's lifetime, unguessable enough for
  // an id that only pairs a call with its result.
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  static std::atomic<uint64_t> counter{0};
  uint64_t v = base + 0x9e3779b97f4a7c15ULL * (counter.fetch_add(1) + 1);
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) {
    id += kAlphabet[v % 62];
    v = v / 62 ^ (v << 29) * 0xbf58476d1ce4e5b9ULL;
  }
  return id;
}

ToolCallParse parse_tool_calls(std::string_view text, ToolCallFormat format, const ojson& tools) {
  ToolCallStream stream(format, tools);
  ToolCallStream::Delta a = stream.feed(text), b = stream.finish();
  ToolCallParse out;
  out.content = a.content + b.content;
  out.calls = std::move(a.calls);
  for (ToolCall& c : b.calls) out.calls.push_back(std::move(c));
  if (!out.calls.empty() && blank(out.content)) out.content.clear();
  return out;
}

ToolCallStream::ToolCallStream(ToolCallFormat format, ojson tools) : format_(format), tools_(std::move(tools)) {}

ToolCallStream::Delta ToolCallStream::feed(std::string_view text) {
  pending_.append(text);
  return drain(false);
}

ToolCallStream::Delta ToolCallStream::finish() { return drain(true); }

ToolCallStream::Delta ToolCallStream::drain(bool final) {
  Delta d;
  switch (format_) {
    case ToolCallFormat::None:
      d.content = std::move(pending_);
      pending_.clear();
      return d;
    case ToolCallFormat::Llama3Json: {
      if (llama_candidate_) {  // a call must open the reply: hold it until it is known not to be one
        const std::string_view t = trim(pending_);
        const bool could_be = t.empty() || t.front() == '{' ||
                              kPythonTag.substr(0, std::min(t.size(), kPythonTag.size())) ==
                                  t.substr(0, std::min(t.size(), kPythonTag.size()));
        if (could_be && !final) return d;
        llama_candidate_ = false;
        if (could_be && parse_llama(pending_, d.calls)) {
          calls_emitted_ += d.calls.size();
          pending_.clear();
          return d;
        }
      }
      d.content = std::move(pending_);
      pending_.clear();
      return d;
    }
    case ToolCallFormat::Hermes:
    case ToolCallFormat::QwenXml:
      break;
  }
  // Whitespace around calls is the template's layout, not content: the whitespace before a call is
  // dropped (held back while a call may follow), and blank text once a call has been made.
  auto emit = [&](std::string_view piece) {
    if (calls_emitted_ > 0 && blank(piece)) return;
    d.content.append(piece);
  };
  for (;;) {
    const size_t open = pending_.find(kOpen);
    if (open == std::string::npos) {
      size_t keep = 0;
      if (!final) {  // a possible start of a call, and the whitespace before it
        keep = partial_tag_suffix(pending_, kOpen);
        while (keep < pending_.size() &&
               std::string_view(" \t\r\n").find(pending_[pending_.size() - keep - 1]) != std::string_view::npos)
          ++keep;
      }
      emit(std::string_view(pending_).substr(0, pending_.size() - keep));
      pending_.erase(0, pending_.size() - keep);
      return d;
    }
    const std::string_view before = rtrim(std::string_view(pending_).substr(0, open));
    if (!before.empty()) emit(before);
    pending_.erase(0, open);
    const size_t close = pending_.find(kClose, kOpen.size());
    if (close == std::string::npos && !final) return d;  // the call is still being written
    const size_t end = close == std::string::npos ? pending_.size() : close + kClose.size();
    const std::string_view inside = std::string_view(pending_).substr(
        kOpen.size(), (close == std::string::npos ? pending_.size() : close) - kOpen.size());
    ToolCall call;
    if (parse_block(inside, format_, tools_, call)) {
      d.calls.push_back(std::move(call));
      ++calls_emitted_;
    } else {
      emit(std::string_view(pending_).substr(0, end));  // not a call after all: the model's text stays
    }
    pending_.erase(0, end);
  }
}

}  // namespace opchain::server
