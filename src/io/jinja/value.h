#pragma once
// Values: Python objects as Jinja2 sees them, and the Python semantics every part of the engine
// shares (truthiness, ==, <, type names, conversion from the JSON render context).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace opchain::jinja::detail {

struct Value;
struct List;
struct Dict;
struct Namespace;
struct Function;
// Lists and tuples share a representation; the flag only matters for repr() ("(1, 2)") and for
// `fmt % args`, where a tuple spreads into several arguments.
struct List : std::vector<Value> {
  using std::vector<Value>::vector;
  bool is_tuple = false;
};
using ListPtr = std::shared_ptr<const List>;
using DictPtr = std::shared_ptr<const Dict>;
// Namespaces are the one mutable object ({% set ns.x = ... %}) and have reference semantics.
using NamespacePtr = std::shared_ptr<Namespace>;
using FunctionPtr = std::shared_ptr<const Function>;

// Jinja2's Undefined: falsy, prints as "", iterates as empty, but raises when used in arithmetic,
// attribute access or calls. `message` is the error to raise then ("'x' is undefined").
struct Undefined {
  std::string message;
};
struct None {};

struct Value {
  using Data = std::variant<Undefined, None, bool, std::int64_t, double, std::string, ListPtr, DictPtr, NamespacePtr,
                            FunctionPtr>;
  Data data = Undefined{};

  static Value undefined(std::string message) { return Value{Undefined{std::move(message)}}; }
  static Value none() { return Value{None{}}; }
  static Value boolean(bool b) { return Value{b}; }
  static Value integer(std::int64_t i) { return Value{i}; }
  static Value number(double d) { return Value{d}; }
  static Value string(std::string s) { return Value{std::move(s)}; }
  static Value list(List items) { return Value{std::make_shared<const List>(std::move(items))}; }
  static Value tuple(List items) {
    items.is_tuple = true;
    return list(std::move(items));
  }
  static Value dict(Dict d);
  static Value function(FunctionPtr f) { return Value{std::move(f)}; }

  template <class T>
  bool is() const {
    return std::holds_alternative<T>(data);
  }
  template <class T>
  const T& as() const {
    return std::get<T>(data);
  }
  bool is_undefined() const { return is<Undefined>(); }
  bool is_none() const { return is<None>(); }
  bool is_bool() const { return is<bool>(); }
  bool is_int() const { return is<std::int64_t>(); }
  bool is_float() const { return is<double>(); }
  // Python's numbers.Number includes bool.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return is<std::string>(); }
  bool is_list() const { return is<ListPtr>(); }
  bool is_dict() const { return is<DictPtr>(); }
  bool is_namespace() const { return is<NamespacePtr>(); }
  bool is_function() const { return is<FunctionPtr>(); }
  const std::string& str() const { return as<std::string>(); }
  const List& items() const { return *as<ListPtr>(); }
  const Dict& dict() const { return *as<DictPtr>(); }
};

// Python dicts keep insertion order; keys are strings (all JSON can express).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;

  const Value* find(std::string_view key) const {
    for (const auto& [k, v] : entries) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  void set(std::string key, Value value) {
    for (auto& entry : entries) {
      if (entry.first == key) {
        entry.second = std::move(value);
        return;
      }
    }
    entries.emplace_back(std::move(key), std::move(value));
  }
};

inline Value Value::dict(Dict d) { return Value{std::make_shared<const Dict>(std::move(d))}; }

struct Namespace {
  Dict attrs;
};

class Interpreter;

struct CallArgs {
  List positional;
  std::vector<std::pair<std::string, Value>> keyword;
  int line = 0;
};

struct Function {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> invoke;
};

// Python's type(x).__name__, for error messages.
std::string type_name(const Value& v);

// Raise the error an Undefined carries, as Jinja2 does when one is used in an operation.
[[noreturn]] void fail_undefined(const Value& v, int line);

// Python truthiness.
bool truthy(const Value& v);

// Python ==. bool takes part in numeric comparison (True == 1).
bool equal(const Value& a, const Value& b);

// Python's a < b; fails like Python's TypeError for unorderable types.
bool less(const Value& a, const Value& b, int line);

// Converts the render context (nlohmann::json or ordered_json) to Values; fails past kMaxNesting.
template <class Json>
Value from_json(const Json& j, int depth);

}  // namespace opchain::jinja::detail
