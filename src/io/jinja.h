#pragma once
// A Jinja2 template engine covering what Hugging Face chat templates use.
//
// Why our own: chat templates are Jinja2 programs and the prompt must match transformers'
// apply_chat_template byte for byte, so semantics follow Python Jinja2 (Undefined rules, Python
// truthiness, str()/repr() of values, loop scoping) rather than a "close enough" mustache.
//
// Errors:
//   * FormatError: the template itself is bad or uses something this engine does not support
//     (unknown tag, filter, test, method or function). Detected at parse time where the name is
//     static, otherwise at render time. The message names the construct and the template line.
//   * InvalidArgumentError: rendering failed because of the data (use of an undefined value,
//     type mismatch, raise_exception(...) called by the template). Also names the line.
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace opchain::jinja {

struct Options {
  // Remove the first newline after a block tag or comment ({% ... %}, {# ... #}).
  bool trim_blocks = false;
  // Strip spaces and tabs from the start of a line up to a block tag or comment.
  bool lstrip_blocks = false;
  // Jinja2 drops one trailing newline of the source unless asked to keep it.
  bool keep_trailing_newline = false;
};

class Template {
 public:
  // Parses the whole template up front so unsupported constructs fail before any rendering.
  static Template parse(std::string source, Options options = {});

  // context must be a JSON object (or null); its keys become template variables.
  // The ordered_json overload keeps object key order (as Python dicts do), which matters for
  // `tojson` and `for k in dict`; nlohmann::json sorts keys alphabetically.
  // render() is const and may run concurrently on one Template.
  std::string render(const nlohmann::json& context) const;
  std::string render(const nlohmann::ordered_json& context) const;

  struct Program;  // parsed form; defined in jinja.cpp

 private:
  explicit Template(std::shared_ptr<const Program> program);
  std::shared_ptr<const Program> program_;
};

}  // namespace opchain::jinja
