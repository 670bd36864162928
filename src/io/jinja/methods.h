#pragma once
// Methods called on values: str's (split, strip, startswith, format, ...), dict's (get, items,
// keys, values), and callables stored in a dict or namespace (loop.cycle).
#include <string>
#include <string_view>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// Whether `.name()` can ever be called; the parser rejects any other method at load time.
bool is_known_method(std::string_view name);

// obj.name(args).
Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args);

}  // namespace opchain::jinja::detail
