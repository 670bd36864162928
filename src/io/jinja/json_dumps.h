#pragma once
// JSON output exactly as Python's json.dumps(x, ensure_ascii=..., indent=..., separators=...,
// sort_keys=...) writes it: transformers overrides Jinja2's tojson with that call.
#include <optional>
#include <string>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

struct JsonStyle {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Appends v as JSON; fails on values JSON cannot hold and past kMaxNesting.
void write_json(std::string& out, const Value& v, const JsonStyle& style, int depth, int line);

}  // namespace opchain::jinja::detail
