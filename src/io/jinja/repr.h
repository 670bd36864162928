#pragma once
// str() and repr() as Python prints them: what {{ x }} writes, and what error messages quote.
#include <string>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// float.__repr__: shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16.
std::string py_float_repr(double d);

// Python repr() of a str: quotes chosen as Python does, control characters escaped.
std::string py_str_repr(const std::string& s);

// Python str(v) (repr=false) or repr(v) (repr=true), appended to out.
void append_str(std::string& out, const Value& v, bool repr, int depth);

std::string to_str(const Value& v);
std::string to_repr(const Value& v);

}  // namespace opchain::jinja::detail
