#pragma once
// The builtin filters (`x | name(args)`): the subset of jinja2's that chat templates use, plus
// transformers' tojson.
#include <string_view>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);

// nullptr for a name that is not a filter; the parser reports it when the template is loaded.
FilterFn find_filter(std::string_view name);

}  // namespace opchain::jinja::detail
