#pragma once
// How the engine fails (the contract is in io/jinja.h): FormatError for a bad or unsupported
// template, InvalidArgumentError for a render that the data made fail.
#include <string>

#include "core/error.h"

namespace opchain::jinja::detail {

// Every message starts with the template line so a failing chat template can be fixed.
inline std::string at_line(int line) { return "template line " + std::to_string(line) + ": "; }

[[noreturn]] inline void fail_syntax(int line, const std::string& message) {
  throw FormatError(at_line(line) + message);
}

// The template is well-formed Jinja2 but uses something this engine does not implement.
[[noreturn]] inline void fail_unsupported(int line, const std::string& what) {
  throw FormatError(at_line(line) + "unsupported " + what);
}

// Rendering failed because of the data (or the template rejected it via raise_exception).
[[noreturn]] inline void fail_render(int line, const std::string& message) {
  throw InvalidArgumentError(at_line(line) + message);
}

}  // namespace opchain::jinja::detail
