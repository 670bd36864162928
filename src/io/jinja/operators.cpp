#include "io/jinja/operators.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "io/jinja/access.h"
#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/format.h"
#include "io/jinja/limits.h"

namespace opchain::jinja::detail {

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (a.is_undefined()) fail_undefined(a, line);
  if (b.is_undefined()) fail_undefined(b, line);
  auto type_error = [&]() -> Value {
    if (op == "+" && a.is_string()) {
      fail_render(line, "can only concatenate str (not \"" + type_name(b) + "\") to str");
    }
    fail_render(line, "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  if (a.is_number() && b.is_number()) {
    if (ints && op != "/") {
      const std::int64_t x = as_int(a, op, line);
      const std::int64_t y = as_int(b, op, line);
      std::int64_t r = 0;
      bool overflow = false;
      if (op == "+") {
        overflow = __builtin_add_overflow(x, y, &r);
      } else if (op == "-") {
        overflow = __builtin_sub_overflow(x, y, &r);
      } else if (op == "*") {
        overflow = __builtin_mul_overflow(x, y, &r);
      } else if (op == "//" || op == "%") {
        if (y == 0) fail_render(line, "integer division or modulo by zero");
        if (x == std::numeric_limits<std::int64_t>::min() && y == -1) {
          overflow = op == "//";
          r = 0;
        } else {
          std::int64_t q = x / y;
          std::int64_t m = x % y;
          // Python floors; C++ truncates toward zero.
          if (m != 0 && ((m < 0) != (y < 0))) {
            --q;
            m += y;
          }
          r = op == "//" ? q : m;
        }
      } else if (op == "**") {
        if (y < 0) return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        // By squaring: a loop of y multiplications never overflows for x in {-1, 0, 1} and would run
        // for as long as the exponent says (2 ** 0 ... 1 ** 10**18).
        r = 1;
        std::int64_t base = x;
        for (std::int64_t e = y; e > 0 && !overflow; e >>= 1) {
          if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
          if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
      }
      if (overflow) fail_render(line, "integer overflow in '" + op + "'");
      return Value::integer(r);
    }
    const double x = as_double(a, op, line);
    const double y = as_double(b, op, line);
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "/") {
      if (y == 0) fail_render(line, "division by zero");
      return Value::number(x / y);
    }
    if (op == "//") {
      if (y == 0) fail_render(line, "float floor division by zero");
      return Value::number(std::floor(x / y));
    }
    if (op == "%") {
      if (y == 0) fail_render(line, "float modulo by zero");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::number(m);
    }
    if (op == "**") return Value::number(std::pow(x, y));
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_text_size(a.str().size() + b.str().size(), line, "'+'");
      return Value::string(a.str() + b.str());
    }
    if (a.is_list() && b.is_list()) {
      if (a.items().size() + b.items().size() > kMaxSequenceItems) {
        fail_render(line, "'+' would make a list of more than " + std::to_string(kMaxSequenceItems) + " items");
      }
      List items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items));
    }
  }
  if (op == "*") {
    const Value* seq = (a.is_string() || a.is_list()) ? &a : &b;
    const Value* count = seq == &a ? &b : &a;
    if ((seq->is_string() || seq->is_list()) && (count->is_int() || count->is_bool())) {
      const std::int64_t n = as_int(*count, op, line);
      const std::size_t len = seq->is_string() ? seq->str().size() : seq->items().size();
      // Divided, not multiplied: len * n wraps for a huge n and would pass any bound.
      const std::size_t limit = seq->is_string() ? kMaxTextBytes : kMaxSequenceItems;
      if (n > 0 && len > 0 && static_cast<std::uint64_t>(n) > limit / len) {
        fail_render(line, "sequence repetition would make " + std::to_string(len) + " x " + std::to_string(n) +
                              (seq->is_string() ? " bytes" : " items") + ", over the template limit of " +
                              std::to_string(limit));
      }
      if (seq->is_string()) {
        std::string out;
        for (std::int64_t i = 0; i < n; ++i) out += seq->str();
        return Value::string(std::move(out));
      }
      List items;
      for (std::int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
      return Value::list(std::move(items));
    }
  }
  if (op == "%" && a.is_string()) return Value::string(py_percent_format(a.str(), b, line));
  return type_error();
}

bool compare(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "<") return less(a, b, line);
  if (op == ">") return less(b, a, line);
  if (op == "<=") return less(a, b, line) || equal(a, b);
  if (op == ">=") return less(b, a, line) || equal(a, b);
  if (op == "in") return contains(b, a, line);
  return !contains(b, a, line);  // notin
}

}  // namespace opchain::jinja::detail
