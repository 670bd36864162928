#include "io/jinja/arguments.h"

#include <algorithm>
#include <string>

#include "io/jinja/errors.h"

namespace opchain::jinja::detail {

Bound bind(CallArgs& args, std::initializer_list<std::string_view> params, const std::string& what) {
  Bound out(params.size());
  if (args.positional.size() > params.size()) {
    fail_render(args.line, what + " takes at most " + std::to_string(params.size()) + " argument(s), " +
                               std::to_string(args.positional.size()) + " given");
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) out[i] = std::move(args.positional[i]);
  for (auto& [key, value] : args.keyword) {
    const auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) fail_render(args.line, what + " got an unexpected keyword argument '" + key + "'");
    auto& slot = out[static_cast<std::size_t>(it - params.begin())];
    if (slot) fail_render(args.line, what + " got multiple values for argument '" + key + "'");
    slot = std::move(value);
  }
  return out;
}

const Value& require(const std::optional<Value>& v, const std::string& what, std::string_view param, int line) {
  if (!v) fail_render(line, what + " missing required argument '" + std::string(param) + "'");
  return *v;
}

std::int64_t as_int(const Value& v, const std::string& what, int line) {
  if (v.is_int()) return v.as<std::int64_t>();
  if (v.is_bool()) return v.as<bool>() ? 1 : 0;
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects an integer, got '" + type_name(v) + "'");
}

double as_double(const Value& v, const std::string& what, int line) {
  if (v.is_float()) return v.as<double>();
  if (v.is_int()) return static_cast<double>(v.as<std::int64_t>());
  if (v.is_bool()) return v.as<bool>() ? 1.0 : 0.0;
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects a number, got '" + type_name(v) + "'");
}

const std::string& as_string(const Value& v, const std::string& what, int line) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects a string, got '" + type_name(v) + "'");
}

}  // namespace opchain::jinja::detail
