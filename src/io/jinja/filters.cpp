#include "io/jinja/filters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/jinja/access.h"
#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/format.h"
#include "io/jinja/json_dumps.h"
#include "io/jinja/limits.h"
#include "io/jinja/operators.h"
#include "io/jinja/python_string.h"
#include "io/jinja/repr.h"
#include "io/jinja/tests.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's int(str) / float(str) as the |int and |float filters use them.
std::optional<double> parse_py_float(std::string s) {
  s = py_strip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  double d = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), d);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return d;
}

std::optional<std::int64_t> parse_py_int(std::string s, int base) {
  s = py_strip(s, std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.erase(0, 2);
  std::int64_t v = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return negative ? -v : v;
}

// jinja2's attribute paths for map/selectattr/sort: "a.b.0".
Value attr_path(const Value& item, const std::string& path, int line) {
  Value cur = item;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ascii_digit)) {
      std::int64_t index = std::numeric_limits<std::int64_t>::max();  // past any list when out of range
      std::from_chars(part.data(), part.data() + part.size(), index);
      cur = get_item(cur, Value::integer(index), line);
    } else {
      cur = get_item(cur, Value::string(part), line);
    }
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
  // transformers: json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
  //                          sort_keys=sort_keys)
  const Bound a = bind(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonStyle style;
  style.ensure_ascii = a[0] && truthy(*a[0]);
  if (given(a[1])) {
    if (a[1]->is_string()) {
      style.indent = a[1]->str();
    } else {
      const std::int64_t n = as_int(*a[1], "tojson indent", args.line);
      style.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(n, 0, 1024)), ' ');
    }
    style.item_separator = ",";
  }
  if (given(a[2])) {
    const ListPtr seps = iterate(*a[2], args.line);
    if (seps->size() != 2 || !(*seps)[0].is_string() || !(*seps)[1].is_string()) {
      fail_render(args.line, "tojson separators must be a pair of strings");
    }
    style.item_separator = (*seps)[0].str();
    style.key_separator = (*seps)[1].str();
  }
  style.sort_keys = a[3] && truthy(*a[3]);
  std::string out;
  write_json(out, v, style, 0, args.line);
  return Value::string(std::move(out));
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "length");
  if (v.is_string()) return Value::integer(utf8_length(v.str()));
  if (v.is_list()) return Value::integer(static_cast<std::int64_t>(v.items().size()));
  if (v.is_dict()) return Value::integer(static_cast<std::int64_t>(v.dict().entries.size()));
  if (v.is_undefined()) return Value::integer(0);
  fail_render(args.line, "object of type '" + type_name(v) + "' has no len()");
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"chars"}, "trim");
  std::optional<std::string> chars;
  if (given(a[0])) chars = as_string(*a[0], "trim", args.line);
  return Value::string(py_strip(to_str(v), chars, true, true));
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"default_value", "boolean"}, "default");
  const bool boolean = a[1] && truthy(*a[1]);
  if (v.is_undefined() || (boolean && !truthy(v))) return a[0] ? *a[0] : Value::string("");
  return v;
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "first");
  ListPtr items = iterate(v, args.line);
  if (items->empty()) return Value::undefined("No first item, sequence was empty.");
  return items->front();
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "last");
  ListPtr items = iterate(v, args.line);
  if (items->empty()) return Value::undefined("No last item, sequence was empty.");
  return items->back();
}

Value f_join(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"d", "attribute"}, "join");
  const std::string sep = a[0] ? to_str(*a[0]) : "";
  std::string out;
  bool first = true;
  const ListPtr items = iterate(v, args.line);  // owned here: a range-for would free a fresh list
  for (const auto& item : *items) {
    if (!first) out += sep;
    first = false;
    out += to_str(given(a[1]) ? attr_path(item, to_str(*a[1]), args.line) : item);
    check_text_size(out.size(), args.line, "join");
  }
  return Value::string(std::move(out));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "string");
  return Value::string(to_str(v));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"default", "base"}, "int");
  const Value fallback = a[0] ? *a[0] : Value::integer(0);
  const int base = a[1] ? static_cast<int>(as_int(*a[1], "int base", args.line)) : 10;
  if (v.is_int()) return v;
  if (v.is_bool()) return Value::integer(v.as<bool>() ? 1 : 0);
  if (v.is_float()) {
    const double d = v.as<double>();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<std::int64_t>(d));
  }
  if (v.is_string()) {
    if (base < 2 || base > 36) fail_render(args.line, "int() base must be >= 2 and <= 36");
    if (auto i = parse_py_int(v.str(), base)) return Value::integer(*i);
    if (auto d = parse_py_float(v.str()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) {
      return Value::integer(static_cast<std::int64_t>(*d));
    }
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"default"}, "float");
  if (v.is_float()) return v;
  if (v.is_int()) return Value::number(static_cast<double>(v.as<std::int64_t>()));
  if (v.is_bool()) return Value::number(v.as<bool>() ? 1.0 : 0.0);
  if (v.is_string()) {
    if (auto d = parse_py_float(v.str())) return Value::number(*d);
  }
  return a[0] ? *a[0] : Value::number(0.0);
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "list");
  ListPtr items = iterate(v, args.line);
  if (!items->is_tuple) return Value{std::move(items)};
  List copy = *items;
  copy.is_tuple = false;
  return Value::list(std::move(copy));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "lower");
  return Value::string(to_lower(to_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "upper");
  return Value::string(to_upper(to_str(v)));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "capitalize");
  return Value::string(py_capitalize(to_str(v)));
}

// jinja2's |title differs from str.title(): a word starts after whitespace or one of -([{<, its
// first character is upper-cased and the rest lower-cased (so "x's" stays "X's", not "X'S").
Value f_title(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "title");
  const std::string s = to_str(v);
  std::string out;
  bool word_start = true;
  for (const char c : s) {
    const bool boundary = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (boundary) {
      out += c;
      word_start = true;
    } else {
      out += word_start ? ascii_upper(c) : ascii_lower(c);
      word_start = false;
    }
  }
  return Value::string(std::move(out));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "items");
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict())
    fail_render(args.line, "|items: can only get item pairs from a mapping, got '" + type_name(v) + "'");
  return dict_items(v.dict());
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "safe");
  return v;
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "escape");
  return Value::string(html_escape(to_str(v)));
}

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"old", "new", "count"}, "replace");
  const int line = args.line;
  const std::int64_t count = given(a[2]) ? as_int(*a[2], "replace count", line) : -1;
  return Value::string(py_replace(to_str(v), to_str(require(a[0], "replace", "old", line)),
                                  to_str(require(a[1], "replace", "new", line)), count, line));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "reverse");
  if (v.is_string()) {
    auto chars = utf8_chars(v.str());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value::string(std::move(out));
  }
  List items = *iterate(v, args.line);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"name"}, "attr");
  const std::string& name = as_string(require(a[0], "attr", "name", args.line), "attr", args.line);
  // |attr is getattr() only: dict keys are items, not attributes, so only namespaces answer.
  if (v.is_dict()) return Value::undefined("'dict object' has no attribute '" + name + "'");
  return get_attr(v, name, args.line);
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "abs");
  if (v.is_float()) return Value::number(std::fabs(v.as<double>()));
  const std::int64_t i = as_int(v, "abs", args.line);
  if (i == std::numeric_limits<std::int64_t>::min()) fail_render(args.line, "integer overflow in abs");
  return Value::integer(i < 0 ? -i : i);
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"precision", "method"}, "round");
  const std::int64_t precision = a[0] ? as_int(*a[0], "round precision", args.line) : 0;
  const std::string method = a[1] ? to_str(*a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    fail_render(args.line, "round method must be 'common', 'ceil' or 'floor'");
  }
  if (method == "common" && (v.is_int() || v.is_bool())) return Value::integer(as_int(v, "round", args.line));
  const double x = as_double(v, "round", args.line);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  double r;
  if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else if (method == "floor") {
    r = std::floor(x * scale) / scale;
  } else {
    r = std::nearbyint(x * scale) / scale;  // default rounding mode: half to even, like Python
  }
  return Value::number(r);
}

// Sort key: the item or its attribute, lower-cased for case-insensitive string comparison.
Value sort_key(const Value& item, const std::optional<Value>& attribute, bool case_sensitive, int line) {
  Value key = given(attribute) ? attr_path(item, to_str(*attribute), line) : item;
  if (!case_sensitive && key.is_string()) return Value::string(to_lower(key.str()));
  return key;
}

Value f_sort(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"reverse", "case_sensitive", "attribute"}, "sort");
  const bool reverse = a[0] && truthy(*a[0]);
  const bool case_sensitive = a[1] && truthy(*a[1]);
  const ListPtr items = iterate(v, args.line);
  std::vector<std::pair<Value, std::size_t>> keyed;
  for (std::size_t i = 0; i < items->size(); ++i)
    keyed.emplace_back(sort_key((*items)[i], a[2], case_sensitive, args.line), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first, args.line) : less(x.first, y.first, args.line);
  });
  List out;
  for (const auto& [key, i] : keyed) out.push_back((*items)[i]);
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!v.is_dict()) fail_render(args.line, "|dictsort expects a mapping, got '" + type_name(v) + "'");
  const bool case_sensitive = a[0] && truthy(*a[0]);
  const std::string by = a[1] ? to_str(*a[1]) : "key";
  if (by != "key" && by != "value") fail_render(args.line, "|dictsort: by must be 'key' or 'value'");
  const bool reverse = a[2] && truthy(*a[2]);
  List pairs = dict_items(v.dict()).items();
  const std::size_t pos = by == "key" ? 0 : 1;
  auto key = [&](const Value& pair) { return sort_key(pair.items()[pos], std::nullopt, case_sensitive, args.line); };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x), args.line) : less(key(x), key(y), args.line);
  });
  return Value::list(std::move(pairs));
}

Value f_unique(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"case_sensitive", "attribute"}, "unique");
  const bool case_sensitive = a[0] && truthy(*a[0]);
  List out;
  List seen;
  const ListPtr items = iterate(v, args.line);  // owned here: a range-for would free a fresh list
  for (const auto& item : *items) {
    Value key = sort_key(item, a[1], case_sensitive, args.line);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value min_max(const Value& v, CallArgs& args, bool want_max) {
  const Bound a = bind(args, {"case_sensitive", "attribute"}, want_max ? "max" : "min");
  const bool case_sensitive = a[0] && truthy(*a[0]);
  const ListPtr items = iterate(v, args.line);
  if (items->empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  Value best_key = sort_key((*items)[0], a[1], case_sensitive, args.line);
  for (std::size_t i = 1; i < items->size(); ++i) {
    Value key = sort_key((*items)[i], a[1], case_sensitive, args.line);
    if (want_max ? less(best_key, key, args.line) : less(key, best_key, args.line)) {
      best = i;
      best_key = std::move(key);
    }
  }
  return (*items)[best];
}

Value f_min(Interpreter&, const Value& v, CallArgs& args) { return min_max(v, args, false); }
Value f_max(Interpreter&, const Value& v, CallArgs& args) { return min_max(v, args, true); }

Value f_sum(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"attribute", "start"}, "sum");
  Value total = a[1] ? *a[1] : Value::integer(0);
  const ListPtr items = iterate(v, args.line);  // owned here: a range-for would free a fresh list
  for (const auto& item : *items) {
    total = arithmetic("+", total, given(a[0]) ? attr_path(item, to_str(*a[0]), args.line) : item, args.line);
  }
  return total;
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
  const Bound a = bind(args, {"width", "first", "blank"}, "indent");
  std::string indention(4, ' ');
  if (a[0]) {
    indention = a[0]->is_string() ? a[0]->str()
                                  : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                                    as_int(*a[0], "indent width", args.line), 0, 1024)),
                                                ' ');
  }
  const bool first = a[1] && truthy(*a[1]);
  const bool blank = a[2] && truthy(*a[2]);
  // Mirrors jinja2's do_indent, including its "append a newline before splitlines" quirk.
  const auto lines = py_splitlines(to_str(v) + "\n");
  std::string rv;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      rv += '\n';
      if (blank || !lines[i].empty()) rv += indention;
    }
    rv += lines[i];
  }
  if (first) rv = indention + rv;
  return Value::string(std::move(rv));
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.keyword.empty()) fail_unsupported(args.line, "keyword arguments to |format");
  return Value::string(py_percent_format(to_str(v), args.positional, args.line));
}

// |map(attribute='x', default=...) or |map('filter', args...).
Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  const ListPtr items = iterate(v, args.line);
  List out;
  if (args.positional.empty()) {
    const Bound a = bind(args, {"attribute", "default"}, "map");
    const std::string path = to_str(require(a[0], "map", "attribute", args.line));
    for (const auto& item : *items) {
      Value x = attr_path(item, path, args.line);
      if (x.is_undefined() && a[1]) x = *a[1];
      out.push_back(std::move(x));
    }
    return Value::list(std::move(out));
  }
  const std::string name = as_string(args.positional[0], "map", args.line);
  const FilterFn fn = find_filter(name);
  if (fn == nullptr) fail_unsupported(args.line, "filter '" + name + "' (in map)");
  for (const auto& item : *items) {
    CallArgs sub;
    sub.line = args.line;
    sub.positional.assign(args.positional.begin() + 1, args.positional.end());
    sub.keyword = args.keyword;
    out.push_back(fn(in, item, sub));
  }
  return Value::list(std::move(out));
}

// Shared by select/reject/selectattr/rejectattr.
Value select_impl(Interpreter& in, const Value& v, CallArgs& args, bool by_attr, bool keep) {
  const char* what = by_attr ? (keep ? "selectattr" : "rejectattr") : (keep ? "select" : "reject");
  if (!args.keyword.empty()) fail_render(args.line, std::string(what) + " takes no keyword arguments");
  std::size_t next = 0;
  std::string path;
  if (by_attr) {
    if (args.positional.empty()) fail_render(args.line, std::string(what) + " needs an attribute name");
    path = as_string(args.positional[next++], what, args.line);
  }
  TestFn test = nullptr;
  if (next < args.positional.size()) {
    const std::string name = as_string(args.positional[next++], what, args.line);
    test = find_test(name);
    if (test == nullptr) fail_unsupported(args.line, "test '" + name + "' (in " + what + ")");
  }
  List out;
  const ListPtr items = iterate(v, args.line);  // owned here: a range-for would free a fresh list
  for (const auto& item : *items) {
    const Value subject = by_attr ? attr_path(item, path, args.line) : item;
    bool ok;
    if (test != nullptr) {
      CallArgs sub;
      sub.line = args.line;
      sub.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
      ok = test(in, subject, sub);
    } else {
      ok = truthy(subject);
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& args) { return select_impl(in, v, args, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& args) { return select_impl(in, v, args, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& args) { return select_impl(in, v, args, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& args) { return select_impl(in, v, args, true, false); }

const std::unordered_map<std::string_view, FilterFn>& filter_table() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"capitalize", f_capitalize},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_upper},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& table = filter_table();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace opchain::jinja::detail
