#pragma once
// Python string formatting: printf-style `fmt % args` (also the |format filter) and str.format.
#include <string>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// Python's `fmt % args`; a tuple spreads into several arguments.
std::string py_percent_format(const std::string& fmt, const List& args, int line);
std::string py_percent_format(const std::string& fmt, const Value& args, int line);

// Python's str.format with "{}", "{0}", "{name}" and !r/!s; format specs are not supported.
std::string py_str_format(const std::string& fmt, const CallArgs& args, int line);

}  // namespace opchain::jinja::detail
