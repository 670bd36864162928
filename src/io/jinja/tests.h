#pragma once
// The builtin tests (`x is name`, `x is not name(arg)`), also used by select/reject.
#include <string_view>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

using TestFn = bool (*)(Interpreter&, const Value& input, CallArgs& args);

// nullptr for a name that is not a test; the parser reports it when the template is loaded.
TestFn find_test(std::string_view name);

}  // namespace opchain::jinja::detail
