#include "io/jinja/globals.h"

#include <cstdint>
#include <ctime>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/repr.h"

namespace opchain::jinja::detail {

namespace {

Value g_range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) fail_render(args.line, "range() takes no keyword arguments");
  std::vector<std::int64_t> a;
  for (const auto& v : args.positional) a.push_back(as_int(v, "range", args.line));
  if (a.empty() || a.size() > 3) fail_render(args.line, "range expected 1 to 3 arguments");
  const std::int64_t start = a.size() == 1 ? 0 : a[0];
  const std::int64_t stop = a.size() == 1 ? a[0] : a[1];
  const std::int64_t step = a.size() == 3 ? a[2] : 1;
  if (step == 0) fail_render(args.line, "range() arg 3 must not be zero");
  // Same cap as jinja2's sandbox (MAX_RANGE), which transformers renders in.
  constexpr std::int64_t kMaxRange = 100000;
  List out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<std::int64_t>(out.size()) >= kMaxRange) fail_render(args.line, "range too big (max 100000 items)");
    out.push_back(Value::integer(i));
    if ((step > 0 && i > std::numeric_limits<std::int64_t>::max() - step) ||
        (step < 0 && i < std::numeric_limits<std::int64_t>::min() - step)) {
      break;
    }
  }
  return Value::list(std::move(out));
}

void fill_dict(Dict& d, CallArgs& args, const char* what) {
  for (const auto& v : args.positional) {
    if (!v.is_dict()) fail_render(args.line, std::string(what) + "() positional arguments must be mappings");
    for (const auto& [k, x] : v.dict().entries) d.set(k, x);
  }
  for (auto& [k, v] : args.keyword) d.set(k, v);
}

Value g_namespace(Interpreter&, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  fill_dict(ns->attrs, args, "namespace");
  return Value{NamespacePtr(std::move(ns))};
}

Value g_dict(Interpreter&, CallArgs& args) {
  Dict d;
  fill_dict(d, args, "dict");
  return Value::dict(std::move(d));
}

Value g_raise_exception(Interpreter&, CallArgs& args) {
  const Bound a = bind(args, {"message"}, "raise_exception");
  throw InvalidArgumentError(at_line(args.line) + "template raised an error: " + (a[0] ? to_str(*a[0]) : ""));
}

Value g_strftime_now(Interpreter&, CallArgs& args) {
  const Bound a = bind(args, {"format"}, "strftime_now");
  const std::string& fmt = as_string(require(a[0], "strftime_now", "format", args.line), "strftime_now", args.line);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::string buf(256 + fmt.size() * 8, '\0');
  const std::size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  buf.resize(n);
  return Value::string(std::move(buf));
}

}  // namespace

FunctionPtr find_global(std::string_view name) {
  static const std::unordered_map<std::string_view, FunctionPtr> table = [] {
    std::unordered_map<std::string_view, FunctionPtr> t;
    auto add = [&t](std::string_view n, Value (*fn)(Interpreter&, CallArgs&)) {
      t.emplace(n, std::make_shared<const Function>(Function{std::string(n), fn}));
    };
    add("range", g_range);
    add("namespace", g_namespace);
    add("dict", g_dict);
    add("raise_exception", g_raise_exception);
    add("strftime_now", g_strftime_now);
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace opchain::jinja::detail
