#pragma once
// Argument binding and type checks for the builtins (filters, tests, methods, globals).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

using Bound = std::vector<std::optional<Value>>;

// Python-style binding of positional and keyword arguments to a fixed parameter list.
// Parameters the caller did not pass stay nullopt.
Bound bind(CallArgs& args, std::initializer_list<std::string_view> params, const std::string& what);

// Treats None like "not passed", as Python signatures with `=None` defaults do.
inline bool given(const std::optional<Value>& v) { return v && !v->is_none(); }

// The argument, or a render error naming the missing parameter.
const Value& require(const std::optional<Value>& v, const std::string& what, std::string_view param, int line);

// The value as a Python int/float/str (bool counts as a number), or a render error naming `what`.
std::int64_t as_int(const Value& v, const std::string& what, int line);
double as_double(const Value& v, const std::string& what, int line);
const std::string& as_string(const Value& v, const std::string& what, int line);

}  // namespace opchain::jinja::detail
