#include "io/jinja/value.h"

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "io/jinja/errors.h"
#include "io/jinja/limits.h"

namespace opchain::jinja::detail {

// Python's type(x).__name__, for error messages.
std::string type_name(const Value& v) {
  switch (v.data.index()) {
    case 0:
      return "Undefined";
    case 1:
      return "NoneType";
    case 2:
      return "bool";
    case 3:
      return "int";
    case 4:
      return "float";
    case 5:
      return "str";
    case 6:
      return "list";
    case 7:
      return "dict";
    case 8:
      return "Namespace";
    default:
      return "function";
  }
}

// Raise the error an Undefined carries, as Jinja2 does when one is used in an operation.
[[noreturn]] void fail_undefined(const Value& v, int line) {
  const std::string& message = v.as<Undefined>().message;
  fail_render(line, message.empty() ? "value is undefined" : message);
}

bool truthy(const Value& v) {
  switch (v.data.index()) {
    case 0:
    case 1:
      return false;
    case 2:
      return v.as<bool>();
    case 3:
      return v.as<std::int64_t>() != 0;
    case 4:
      return v.as<double>() != 0.0;
    case 5:
      return !v.str().empty();
    case 6:
      return !v.items().empty();
    case 7:
      return !v.dict().entries.empty();
    default:
      return true;
  }
}

// Python ==. bool takes part in numeric comparison (True == 1).
bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      auto as_double = [](const Value& v) {
        if (v.is_float()) return v.as<double>();
        if (v.is_bool()) return v.as<bool>() ? 1.0 : 0.0;
        return static_cast<double>(v.as<std::int64_t>());
      };
      return as_double(a) == as_double(b);
    }
    auto as_int = [](const Value& v) {
      return v.is_bool() ? static_cast<std::int64_t>(v.as<bool>()) : v.as<std::int64_t>();
    };
    return as_int(a) == as_int(b);
  }
  if (a.data.index() != b.data.index()) return false;
  switch (a.data.index()) {
    case 0:
    case 1:
      return true;
    case 5:
      return a.str() == b.str();
    case 6: {
      const List& x = a.items();
      const List& y = b.items();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equal(x[i], y[i])) return false;
      }
      return true;
    }
    case 7: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [key, value] : x.entries) {
        const Value* other = y.find(key);
        if (other == nullptr || !equal(value, *other)) return false;
      }
      return true;
    }
    case 8:
      return a.as<NamespacePtr>() == b.as<NamespacePtr>();
    case 9:
      return a.as<FunctionPtr>() == b.as<FunctionPtr>();
    default:
      return false;
  }
}

// Python's a < b; fails like Python's TypeError for unorderable types.
bool less(const Value& a, const Value& b, int line) {
  if (a.is_undefined()) fail_undefined(a, line);
  if (b.is_undefined()) fail_undefined(b, line);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      auto as_double = [](const Value& v) {
        if (v.is_float()) return v.as<double>();
        if (v.is_bool()) return v.as<bool>() ? 1.0 : 0.0;
        return static_cast<double>(v.as<std::int64_t>());
      };
      return as_double(a) < as_double(b);
    }
    auto as_int = [](const Value& v) {
      return v.is_bool() ? static_cast<std::int64_t>(v.as<bool>()) : v.as<std::int64_t>();
    };
    return as_int(a) < as_int(b);
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list()) {
    const List& x = a.items();
    const List& y = b.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equal(x[i], y[i])) return less(x[i], y[i], line);
    }
    return x.size() < y.size();
  }
  fail_render(line, "'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

template <class Json>
Value from_json(const Json& j, int depth) {
  if (depth > kMaxNesting) {
    throw InvalidArgumentError("template context: JSON nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<std::uint64_t>();
      // Python ints are unbounded; past int64 the nearest double is the best we can keep.
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return Value::number(static_cast<double>(u));
      }
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      d.entries.reserve(j.size());
      // JSON object keys are unique, so no need for Dict::set's duplicate scan.
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.entries.emplace_back(it.key(), from_json(it.value(), depth + 1));
      }
      return Value::dict(std::move(d));
    }
    default:
      throw InvalidArgumentError("template context: unsupported JSON value (binary or discarded)");
  }
}

template Value from_json(const nlohmann::json& j, int depth);
template Value from_json(const nlohmann::ordered_json& j, int depth);

}  // namespace opchain::jinja::detail
