#include "io/json_input.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace opchain {

void check_json_nesting(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting)
        throw FormatError(source + " nests deeper than " + std::to_string(kMaxJsonNesting) +
                          " levels (the JSON nesting limit)");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json_input(std::string_view text, const std::string& source) {
  check_json_nesting(text, source);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(source + " is not valid JSON: " + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FormatError("error reading " + path);
  return parse_json_input(text.str(), path);
}

namespace {

template <class Json>
bool nests_deeper_than(const Json& root, int limit) {
  std::vector<std::pair<const Json*, int>> pending{{&root, 1}};
  while (!pending.empty()) {
    const auto [v, depth] = pending.back();
    pending.pop_back();
    if (!v->is_structured()) continue;
    if (depth > limit) return true;
    for (const auto& child : *v) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

template <class Json>
std::string excerpt(const Json& v) {
  constexpr std::size_t kMaxBytes = 120;
  if (nests_deeper_than(v, kMaxJsonNesting)) return std::string("a ") + v.type_name() + " nested too deeply to show";
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxBytes) {
    std::size_t cut = kMaxBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
    text = text.substr(0, cut) + "...";
  }
  return text;
}

}  // namespace

bool json_nests_deeper_than(const nlohmann::json& v, int limit) { return nests_deeper_than(v, limit); }
bool json_nests_deeper_than(const nlohmann::ordered_json& v, int limit) { return nests_deeper_than(v, limit); }
std::string json_excerpt(const nlohmann::json& v) { return excerpt(v); }
std::string json_excerpt(const nlohmann::ordered_json& v) { return excerpt(v); }

}  // namespace opchain
