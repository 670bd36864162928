#include "io/jinja/methods.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "io/jinja/access.h"
#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/format.h"
#include "io/jinja/limits.h"
#include "io/jinja/python_string.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

namespace {

const std::set<std::string, std::less<>>& string_methods() {
  static const std::set<std::string, std::less<>> names = {
      "capitalize", "count",   "endswith", "find",       "format",     "isalnum", "isalpha", "isdigit",
      "islower",    "isspace", "isupper",  "join",       "lower",      "lstrip",  "replace", "rfind",
      "rsplit",     "rstrip",  "split",    "splitlines", "startswith", "strip",   "title",   "upper"};
  return names;
}

const std::set<std::string, std::less<>>& dict_methods() {
  static const std::set<std::string, std::less<>> names = {"get", "items", "keys", "values"};
  return names;
}

}  // namespace

bool is_known_method(std::string_view name) {
  return string_methods().count(name) != 0 || dict_methods().count(name) != 0 || name == "cycle";
}

namespace {

// Code point range [start, end) of s as a byte substring (Python s[start:end]).
std::string cp_slice(const std::string& s, const std::optional<Value>& start, const std::optional<Value>& end,
                     int line) {
  if (!given(start) && !given(end)) return s;
  const auto offsets = utf8_offsets(s);
  const auto positions = slice_positions(offsets.size() - 1, start ? *start : Value::none(), end ? *end : Value::none(),
                                         Value::none(), line);
  if (positions.empty()) return "";
  return s.substr(offsets[positions.front()], offsets[positions.back() + 1] - offsets[positions.front()]);
}

bool ascii_all(const std::string& s, bool (*pred)(char)) { return !s.empty() && std::all_of(s.begin(), s.end(), pred); }

Value string_method(const std::string& s, const std::string& name, CallArgs& args) {
  const int line = args.line;
  const std::string what = "str." + name + "()";
  auto no_args = [&] { bind(args, {}, what); };
  if (name == "split" || name == "rsplit") {
    const Bound a = bind(args, {"sep", "maxsplit"}, what);
    std::optional<std::string> sep;
    if (given(a[0])) sep = as_string(*a[0], what, line);
    const std::int64_t maxsplit = a[1] ? as_int(*a[1], what, line) : -1;
    List out;
    for (auto& part : py_split(s, sep, maxsplit, name == "rsplit", line)) out.push_back(Value::string(std::move(part)));
    return Value::list(std::move(out));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Bound a = bind(args, {"chars"}, what);
    std::optional<std::string> chars;
    if (given(a[0])) chars = as_string(*a[0], what, line);
    return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    const Bound a = bind(args, {"prefix", "start", "end"}, what);
    const Value& prefix = require(a[0], what, "prefix", line);
    const std::string sub = cp_slice(s, a[1], a[2], line);
    auto check = [&](const Value& p) {
      const std::string& x = as_string(p, what, line);
      if (x.size() > sub.size()) return false;
      return name == "startswith" ? sub.compare(0, x.size(), x) == 0
                                  : sub.compare(sub.size() - x.size(), x.size(), x) == 0;
    };
    if (prefix.is_list()) {
      return Value::boolean(std::any_of(prefix.items().begin(), prefix.items().end(), check));
    }
    return Value::boolean(check(prefix));
  }
  if (name == "replace") {
    const Bound a = bind(args, {"old", "new", "count"}, what);
    return Value::string(py_replace(s, as_string(require(a[0], what, "old", line), what, line),
                                    as_string(require(a[1], what, "new", line), what, line),
                                    a[2] ? as_int(*a[2], what, line) : -1, line));
  }
  if (name == "upper") return no_args(), Value::string(to_upper(s));
  if (name == "lower") return no_args(), Value::string(to_lower(s));
  if (name == "title") return no_args(), Value::string(py_title(s));
  if (name == "capitalize") return no_args(), Value::string(py_capitalize(s));
  if (name == "find" || name == "rfind" || name == "count") {
    const Bound a = bind(args, {"sub", "start", "end"}, what);
    const std::string& needle = as_string(require(a[0], what, "sub", line), what, line);
    // Work on the [start:end] window, then translate byte offsets back to code points.
    const auto offsets = utf8_offsets(s);
    const auto window = slice_positions(offsets.size() - 1, a[1] ? *a[1] : Value::none(), a[2] ? *a[2] : Value::none(),
                                        Value::none(), line);
    const std::size_t base_cp = window.empty() ? 0 : window.front();
    const std::string hay =
        window.empty() ? std::string()
                       : s.substr(offsets[window.front()], offsets[window.back() + 1] - offsets[window.front()]);
    if (name == "count") {
      if (needle.empty()) return Value::integer(utf8_length(hay) + 1);
      std::int64_t n = 0;
      for (std::size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
      return Value::integer(n);
    }
    const std::size_t at = name == "find" ? hay.find(needle) : hay.rfind(needle);
    if (at == std::string::npos) return Value::integer(-1);
    return Value::integer(static_cast<std::int64_t>(base_cp) + utf8_length(hay.substr(0, at)));
  }
  if (name == "join") {
    const Bound a = bind(args, {"iterable"}, what);
    std::string out;
    bool first = true;
    const ListPtr items =
        iterate(require(a[0], what, "iterable", line), line);  // owned here: a range-for would free a fresh list
    for (const auto& item : *items) {
      if (!item.is_string()) fail_render(line, "str.join(): expected str instance, " + type_name(item) + " found");
      if (!first) out += s;
      first = false;
      out += item.str();
      check_text_size(out.size(), line, "str.join()");
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    const Bound a = bind(args, {"keepends"}, what);
    if (a[0] && truthy(*a[0])) fail_unsupported(line, "str.splitlines(keepends=True)");
    List out;
    for (auto& l : py_splitlines(s)) out.push_back(Value::string(std::move(l)));
    return Value::list(std::move(out));
  }
  if (name == "isdigit") return no_args(), Value::boolean(ascii_all(s, ascii_digit));
  if (name == "isalpha") return no_args(), Value::boolean(ascii_all(s, ascii_alpha));
  if (name == "isalnum") {
    no_args();
    return Value::boolean(ascii_all(s, [](char c) { return ascii_alpha(c) || ascii_digit(c); }));
  }
  if (name == "isspace") return no_args(), Value::boolean(ascii_all(s, is_py_space));
  if (name == "islower") return no_args(), Value::boolean(ascii_case_test(s, true));
  if (name == "isupper") return no_args(), Value::boolean(ascii_case_test(s, false));
  if (name == "format") return Value::string(py_str_format(s, args, line));
  fail_render(line, "'str object' has no attribute '" + name + "'");
}

}  // namespace

Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args) {
  const int line = args.line;
  if (obj.is_undefined()) fail_undefined(obj, line);
  const Dict* attrs = obj.is_dict() ? &obj.dict() : obj.is_namespace() ? &obj.as<NamespacePtr>()->attrs : nullptr;
  if (attrs != nullptr) {
    // Callables stored as values (loop.cycle, a macro kept in a namespace) take precedence.
    if (const Value* v = attrs->find(name); v != nullptr && v->is_function()) {
      return v->as<FunctionPtr>()->invoke(in, args);
    }
  }
  if (obj.is_dict()) {
    const Dict& d = obj.dict();
    const std::string what = "dict." + name + "()";
    if (name == "items") {
      bind(args, {}, what);
      return dict_items(d);
    }
    if (name == "keys" || name == "values") {
      bind(args, {}, what);
      List out;
      for (const auto& [k, v] : d.entries) out.push_back(name == "keys" ? Value::string(k) : v);
      return Value::list(std::move(out));
    }
    if (name == "get") {
      const Bound a = bind(args, {"key", "default"}, what);
      const Value& key = require(a[0], what, "key", line);
      if (key.is_string()) {
        if (const Value* v = d.find(key.str())) return *v;
      }
      return a[1] ? *a[1] : Value::none();
    }
  }
  if (obj.is_string() && string_methods().count(name) != 0) return string_method(obj.str(), name, args);
  fail_render(line, "'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

}  // namespace opchain::jinja::detail
