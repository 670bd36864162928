#pragma once
// Python's binary operators on Values: + - * / // % ** (with int overflow checks and the
// template limits on built strings and lists) and the comparisons of a chain `a < b in c`.
#include <string>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// op is one of + - * / // % **; `str % args` formats.
Value arithmetic(const std::string& op, const Value& a, const Value& b, int line);

// op is ==, !=, <, <=, >, >=, in or notin.
bool compare(const std::string& op, const Value& a, const Value& b, int line);

}  // namespace opchain::jinja::detail
