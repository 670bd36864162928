#include "io/jinja/tests.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "io/jinja/access.h"
#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/filters.h"
#include "io/jinja/python_string.h"

namespace opchain::jinja::detail {

namespace {

const Value& test_arg(CallArgs& args, const char* name) {
  if (args.positional.size() != 1 || !args.keyword.empty()) {
    fail_render(args.line, std::string("test '") + name + "' takes exactly one argument");
  }
  return args.positional[0];
}

void no_test_args(CallArgs& args, const char* name) {
  if (!args.positional.empty() || !args.keyword.empty()) {
    fail_render(args.line, std::string("test '") + name + "' takes no arguments");
  }
}

#define OPCHAIN_JINJA_SIMPLE_TEST(fname, label, expr)        \
  bool fname(Interpreter&, const Value& v, CallArgs& args) { \
    no_test_args(args, label);                               \
    return (expr);                                           \
  }

OPCHAIN_JINJA_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
OPCHAIN_JINJA_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
OPCHAIN_JINJA_SIMPLE_TEST(t_none, "none", v.is_none())
OPCHAIN_JINJA_SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
OPCHAIN_JINJA_SIMPLE_TEST(t_true, "true", v.is_bool() && v.as<bool>())
OPCHAIN_JINJA_SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as<bool>())
OPCHAIN_JINJA_SIMPLE_TEST(t_string, "string", v.is_string())
OPCHAIN_JINJA_SIMPLE_TEST(t_number, "number", v.is_number())
OPCHAIN_JINJA_SIMPLE_TEST(t_integer, "integer", v.is_int())
OPCHAIN_JINJA_SIMPLE_TEST(t_float, "float", v.is_float())
OPCHAIN_JINJA_SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
// Undefined iterates (as empty) in jinja2, so it counts as iterable and as a sequence.
OPCHAIN_JINJA_SIMPLE_TEST(t_iterable, "iterable", v.is_list() || v.is_dict() || v.is_string() || v.is_undefined())
OPCHAIN_JINJA_SIMPLE_TEST(t_sequence, "sequence", v.is_list() || v.is_dict() || v.is_string() || v.is_undefined())
OPCHAIN_JINJA_SIMPLE_TEST(t_callable, "callable", v.is_function())
OPCHAIN_JINJA_SIMPLE_TEST(t_lower, "lower", v.is_string() && ascii_case_test(v.str(), true))
OPCHAIN_JINJA_SIMPLE_TEST(t_upper, "upper", v.is_string() && ascii_case_test(v.str(), false))
OPCHAIN_JINJA_SIMPLE_TEST(t_escaped, "escaped", (static_cast<void>(v), false))  // nothing is markup here

#undef OPCHAIN_JINJA_SIMPLE_TEST

bool t_odd(Interpreter&, const Value& v, CallArgs& args) {
  no_test_args(args, "odd");
  return as_int(v, "odd", args.line) % 2 != 0;
}
bool t_even(Interpreter&, const Value& v, CallArgs& args) {
  no_test_args(args, "even");
  return as_int(v, "even", args.line) % 2 == 0;
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
  const std::int64_t d = as_int(test_arg(args, "divisibleby"), "divisibleby", args.line);
  if (d == 0) fail_render(args.line, "divisibleby 0");
  return as_int(v, "divisibleby", args.line) % d == 0;
}
bool t_eq(Interpreter&, const Value& v, CallArgs& args) { return equal(v, test_arg(args, "eq")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& args) { return !equal(v, test_arg(args, "ne")); }
bool t_lt(Interpreter&, const Value& v, CallArgs& args) { return less(v, test_arg(args, "lt"), args.line); }
bool t_gt(Interpreter&, const Value& v, CallArgs& args) { return less(test_arg(args, "gt"), v, args.line); }
bool t_le(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = test_arg(args, "le");
  return less(v, o, args.line) || equal(v, o);
}
bool t_ge(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = test_arg(args, "ge");
  return less(o, v, args.line) || equal(v, o);
}
bool t_in(Interpreter&, const Value& v, CallArgs& args) { return contains(test_arg(args, "in"), v, args.line); }
// Python `is`: identity. Singletons and small values compare by value; containers by pointer.
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = test_arg(args, "sameas");
  if (v.data.index() != o.data.index()) return false;
  if (v.is_list()) return v.as<ListPtr>() == o.as<ListPtr>();
  if (v.is_dict()) return v.as<DictPtr>() == o.as<DictPtr>();
  return equal(v, o);
}
bool t_filter(Interpreter&, const Value& v, CallArgs& args) {
  no_test_args(args, "filter");
  return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& args) {
  no_test_args(args, "test");
  return v.is_string() && find_test(v.str()) != nullptr;
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"!=", t_ne},
      {"<", t_lt},
      {"<=", t_le},
      {"==", t_eq},
      {">", t_gt},
      {">=", t_ge},
      {"boolean", t_boolean},
      {"callable", t_callable},
      {"defined", t_defined},
      {"divisibleby", t_divisibleby},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"escaped", t_escaped},
      {"even", t_even},
      {"false", t_false},
      {"filter", t_filter},
      {"float", t_float},
      {"ge", t_ge},
      {"greaterthan", t_gt},
      {"gt", t_gt},
      {"in", t_in},
      {"integer", t_integer},
      {"iterable", t_iterable},
      {"le", t_le},
      {"lessthan", t_lt},
      {"lower", t_lower},
      {"lt", t_lt},
      {"mapping", t_mapping},
      {"ne", t_ne},
      {"none", t_none},
      {"number", t_number},
      {"odd", t_odd},
      {"sameas", t_sameas},
      {"sequence", t_sequence},
      {"string", t_string},
      {"test", t_test},
      {"true", t_true},
      {"undefined", t_undefined},
      {"upper", t_upper},
  };
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace opchain::jinja::detail
