#pragma once
// The global functions templates may call: range, namespace, dict, raise_exception,
// strftime_now.
#include <string_view>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// nullptr for a name that is not a builtin function.
FunctionPtr find_global(std::string_view name);

}  // namespace opchain::jinja::detail
