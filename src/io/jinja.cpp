// Jinja2 engine: lexer -> recursive-descent parser -> AST -> tree-walking interpreter.
// Semantics follow Python Jinja2 3.x with the default Undefined and no autoescaping, which is what
// transformers' apply_chat_template uses. See jinja.h for the error contract.
//
// Everything except the public Template API lives in an anonymous namespace: other parts of
// opchain may well define their own Token/Value/Parser types.
#include "io/jinja.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/utf8.h"

namespace opchain::jinja {
namespace {

// ============================================================================================
// Errors. Every message starts with the template line so a failing chat template can be fixed.
// ============================================================================================

std::string at_line(int line) { return "template line " + std::to_string(line) + ": "; }

[[noreturn]] void fail_syntax(int line, const std::string& message) {
  throw FormatError(at_line(line) + message);
}

// The template is well-formed Jinja2 but uses something this engine does not implement.
[[noreturn]] void fail_unsupported(int line, const std::string& what) {
  throw FormatError(at_line(line) + "unsupported " + what);
}

// Rendering failed because of the data (or the template rejected it via raise_exception).
[[noreturn]] void fail_render(int line, const std::string& message) {
  throw InvalidArgumentError(at_line(line) + message);
}

// Note [Template limits]: a template and its data come from outside (a model's tokenizer_config.json,
// a request's messages), so parsing and rendering are bounded, each limit failing with an error that
// names it (docs/reliability.md lists them):
//   * kMaxNesting bounds every recursion: nested values, the parser's recursion, the height of an
//     expression tree (operator, filter and attribute chains are left-deep trees built by loops, so
//     they count), block nesting, and the render's eval/exec depth including macro calls. Each level
//     is a few native frames; 512 of them fit the 8 MiB stacks of the CLI and the server's threads.
//   * kMaxTextBytes bounds the output and every string a template builds (+, ~, *, join, replace).
//   * kMaxSequenceItems bounds lists built by + and *, kMaxFormatWidth printf-style widths.
//   * kMaxRenderSteps bounds the work of one render: one step per expression evaluated, statement
//     run and loop iteration, and one per item (or 64 bytes) a filter or method walks over.
constexpr int kMaxNesting = 512;
constexpr int kMaxMacroDepth = 100;
constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxSequenceItems = std::size_t{1} << 20;
constexpr int kMaxFormatWidth = 4096;
constexpr std::int64_t kMaxRenderSteps = 5'000'000;

// Fails when a string being built would pass kMaxTextBytes (see Note [Template limits]).
void check_text_size(std::size_t bytes, int line, const char* what) {
  if (bytes > kMaxTextBytes) {
    throw InvalidArgumentError(at_line(line) + what + " would be " + std::to_string(bytes) +
                               " bytes, over the template limit of " + std::to_string(kMaxTextBytes));
  }
}

// ============================================================================================
// Values: Python objects as Jinja2 sees them.
// ============================================================================================

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
  using Data = std::variant<Undefined, None, bool, std::int64_t, double, std::string, ListPtr,
                            DictPtr, NamespacePtr, FunctionPtr>;
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

Value Value::dict(Dict d) { return Value{std::make_shared<const Dict>(std::move(d))}; }

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
std::string type_name(const Value& v) {
  switch (v.data.index()) {
    case 0: return "Undefined";
    case 1: return "NoneType";
    case 2: return "bool";
    case 3: return "int";
    case 4: return "float";
    case 5: return "str";
    case 6: return "list";
    case 7: return "dict";
    case 8: return "Namespace";
    default: return "function";
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
    case 1: return false;
    case 2: return v.as<bool>();
    case 3: return v.as<std::int64_t>() != 0;
    case 4: return v.as<double>() != 0.0;
    case 5: return !v.str().empty();
    case 6: return !v.items().empty();
    case 7: return !v.dict().entries.empty();
    default: return true;
  }
}

// Python's str.isspace() for the ASCII range plus the separators str.split() honours.
bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (c >= '\x1c' && c <= '\x1f');
}

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_digit(char c) { return c >= '0' && c <= '9'; }

std::string to_upper(std::string s) {
  for (char& c : s) c = ascii_upper(c);
  return s;
}
std::string to_lower(std::string s) {
  for (char& c : s) c = ascii_lower(c);
  return s;
}

// Python str.capitalize(): first character upper-cased, the rest lower-cased.
std::string py_capitalize(const std::string& s) {
  std::string out = to_lower(s);
  if (!out.empty()) out[0] = ascii_upper(out[0]);
  return out;
}

// Python str.title(): a letter is upper-cased when it follows a non-letter, lower-cased otherwise.
std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    if (ascii_alpha(c)) {
      c = prev_cased ? ascii_lower(c) : ascii_upper(c);
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
}

// Python str.strip(chars) family. chars == nullopt strips whitespace; otherwise any of the
// given code points.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::vector<char32_t> set;
  if (chars) {
    for (std::size_t i = 0; i < chars->size();) {
      const std::size_t n = utf8_char_len(*chars, i);
      set.push_back(utf8_decode(*chars, i, n));
      i += n;
    }
  }
  auto strippable = [&](std::size_t i, std::size_t n) {
    if (!chars) return n == 1 && is_py_space(s[i]);
    return std::find(set.begin(), set.end(), utf8_decode(s, i, n)) != set.end();
  };
  std::size_t begin = 0;
  std::size_t end = s.size();
  if (left) {
    while (begin < end) {
      const std::size_t n = utf8_char_len(s, begin);
      if (!strippable(begin, n)) break;
      begin += n;
    }
  }
  if (right) {
    while (end > begin) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      const std::size_t n = utf8_char_len(s, start);
      if (start + n != end) {
        // Malformed tail: treat the last byte as its own character.
        start = end - 1;
      }
      if (!strippable(start, end - start)) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

// Python str.split / str.rsplit.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right, int line) {
  std::vector<std::string> parts;
  if (!sep) {
    // Whitespace mode: runs of whitespace separate, leading/trailing whitespace is dropped.
    if (!from_right) {
      std::size_t i = 0;
      while (true) {
        while (i < s.size() && is_py_space(s[i])) ++i;
        if (i >= s.size()) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) >= maxsplit) {
          parts.push_back(s.substr(i));  // Python keeps the remainder's trailing whitespace
          break;
        }
        std::size_t j = i;
        while (j < s.size() && !is_py_space(s[j])) ++j;
        parts.push_back(s.substr(i, j - i));
        i = j;
      }
    } else {
      std::size_t end = s.size();
      while (true) {
        while (end > 0 && is_py_space(s[end - 1])) --end;
        if (end == 0) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) >= maxsplit) {
          parts.push_back(s.substr(0, end));  // ...and its leading whitespace for rsplit
          break;
        }
        std::size_t j = end;
        while (j > 0 && !is_py_space(s[j - 1])) --j;
        parts.push_back(s.substr(j, end - j));
        end = j;
      }
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  if (sep->empty()) fail_render(line, "split(): empty separator");
  if (!from_right) {
    std::size_t start = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
      const std::size_t hit = s.find(*sep, start);
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    parts.push_back(s.substr(start));
  } else {
    std::size_t end = s.size();
    while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const std::size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

// Python str.replace(old, new, count).
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl,
                       std::int64_t count, int line) {
  std::string out;
  std::int64_t done = 0;
  if (old.empty()) {
    // Python inserts `repl` before every character and at the end.
    const auto chars = utf8_chars(s);
    for (const auto& ch : chars) {
      if (count < 0 || done < count) {
        check_text_size(out.size() + repl.size(), line, "replace()");
        out += repl;
        ++done;
      }
      out += ch;
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  std::size_t start = 0;
  while (count < 0 || done < count) {
    const std::size_t hit = s.find(old, start);
    if (hit == std::string::npos) break;
    out.append(s, start, hit - start);
    check_text_size(out.size() + repl.size(), line, "replace()");
    out += repl;
    start = hit + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

// ---------------------------------------------------------------------------------------------
// str() and repr() as Python prints them.
// ---------------------------------------------------------------------------------------------

// float.__repr__: shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16.
std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const std::size_t epos = sci.find('e');
  const int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (std::size_t i = 0; i < epos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (digits.size() <= static_cast<std::size_t>(exp) + 1) {
      out = digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." +
            digits.substr(static_cast<std::size_t>(exp) + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::string e = std::to_string(std::abs(exp));
    if (e.size() < 2) e = "0" + e;
    out += std::string("e") + (exp < 0 ? "-" : "+") + e;
  }
  return sign + out;
}

std::string py_str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

void append_str(std::string& out, const Value& v, bool repr, int depth);

void append_repr(std::string& out, const Value& v, int depth) { append_str(out, v, true, depth); }

// Python str(v) (repr=false) or repr(v) (repr=true), appended to out.
void append_str(std::string& out, const Value& v, bool repr, int depth) {
  if (depth > kMaxNesting) {
    out += "...";
    return;
  }
  switch (v.data.index()) {
    case 0:
      if (repr) out += "Undefined";
      return;
    case 1: out += "None"; return;
    case 2: out += v.as<bool>() ? "True" : "False"; return;
    case 3: out += std::to_string(v.as<std::int64_t>()); return;
    case 4: out += py_float_repr(v.as<double>()); return;
    case 5: out += repr ? py_str_repr(v.str()) : v.str(); return;
    case 6: {
      const List& items = v.items();
      out += items.is_tuple ? '(' : '[';
      bool first = true;
      for (const auto& item : items) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, item, depth + 1);
      }
      if (items.is_tuple && items.size() == 1) out += ',';
      out += items.is_tuple ? ')' : ']';
      return;
    }
    case 7:
    case 8: {
      const Dict& d = v.is_dict() ? v.dict() : v.as<NamespacePtr>()->attrs;
      if (v.is_namespace()) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& [key, item] : d.entries) {
        if (!first) out += ", ";
        first = false;
        out += py_str_repr(key);
        out += ": ";
        append_repr(out, item, depth + 1);
      }
      out += '}';
      if (v.is_namespace()) out += '>';
      return;
    }
    default: out += "<function " + v.as<FunctionPtr>()->name + ">"; return;
  }
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  append_str(out, v, false, 0);
  return out;
}

std::string to_repr(const Value& v) {
  std::string out;
  append_str(out, v, true, 0);
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON output exactly as Python's json.dumps(x, ensure_ascii=..., indent=..., separators=...,
// sort_keys=...) writes it: transformers overrides Jinja2's tojson with that call.
// ---------------------------------------------------------------------------------------------

struct JsonStyle {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

void json_escape(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto hex4 = [&out](unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    out += buf;
  };
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      const std::size_t n = utf8_char_len(s, i);
      if (!ensure_ascii) {
        out.append(s, i, n);
      } else {
        const char32_t cp = utf8_decode(s, i, n);
        if (cp >= 0x10000) {
          const char32_t v = cp - 0x10000;
          hex4(0xD800 + static_cast<unsigned>(v >> 10));
          hex4(0xDC00 + static_cast<unsigned>(v & 0x3FF));
        } else {
          hex4(static_cast<unsigned>(cp));
        }
      }
      i += n;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20 || (ensure_ascii && u == 0x7F)) {
          hex4(u);
        } else {
          out += c;
        }
    }
    ++i;
  }
  out += '"';
}

void write_json(std::string& out, const Value& v, const JsonStyle& style, int depth, int line) {
  if (depth > kMaxNesting) fail_render(line, "tojson: value nested too deeply");
  auto newline_indent = [&](int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *style.indent;
  };
  switch (v.data.index()) {
    case 1: out += "null"; return;
    case 2: out += v.as<bool>() ? "true" : "false"; return;
    case 3: out += std::to_string(v.as<std::int64_t>()); return;
    case 4: {
      const double d = v.as<double>();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        out += py_float_repr(d);
      }
      return;
    }
    case 5: json_escape(out, v.str(), style.ensure_ascii); return;
    case 6: {
      const List& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      if (style.indent) newline_indent(depth + 1);
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) {
          out += style.item_separator;
          if (style.indent) newline_indent(depth + 1);
        }
        write_json(out, items[i], style, depth + 1, line);
      }
      if (style.indent) newline_indent(depth);
      out += ']';
      return;
    }
    case 7: {
      const Dict& d = v.dict();
      if (d.entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : d.entries) entries.push_back(&entry);
      if (style.sort_keys) {
        // Byte order of UTF-8 equals code point order, which is what Python sorts by.
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out += '{';
      if (style.indent) newline_indent(depth + 1);
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) {
          out += style.item_separator;
          if (style.indent) newline_indent(depth + 1);
        }
        json_escape(out, entries[i]->first, style.ensure_ascii);
        out += style.key_separator;
        write_json(out, entries[i]->second, style, depth + 1, line);
      }
      if (style.indent) newline_indent(depth);
      out += '}';
      return;
    }
    default:
      fail_render(line, "tojson: Object of type " + type_name(v) + " is not JSON serializable");
  }
}

// ---------------------------------------------------------------------------------------------
// Equality, ordering and conversion from JSON.
// ---------------------------------------------------------------------------------------------

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
    case 1: return true;
    case 5: return a.str() == b.str();
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
    case 8: return a.as<NamespacePtr>() == b.as<NamespacePtr>();
    case 9: return a.as<FunctionPtr>() == b.as<FunctionPtr>();
    default: return false;
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
  fail_render(line, "'<' not supported between instances of '" + type_name(a) + "' and '" +
                        type_name(b) + "'");
}

template <class Json>
Value from_json(const Json& j, int depth) {
  if (depth > kMaxNesting) {
    throw InvalidArgumentError("template context: JSON nested deeper than " +
                               std::to_string(kMaxNesting) + " levels");
  }
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
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
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
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

// ============================================================================================
// Lexer. Mirrors jinja2.lexer: data between tags, whitespace control (-, +), trim_blocks,
// lstrip_blocks, raw blocks, and bracket balancing so `}}` inside a dict literal does not end a
// print tag.
// ============================================================================================

struct Token {
  enum class Kind { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Kind kind = Kind::End;
  std::string text;  // data text, name, decoded string literal, or operator
  std::int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::Data: return "template text";
    case Token::Kind::VarBegin: return "'{{'";
    case Token::Kind::VarEnd: return "end of print statement '}}'";
    case Token::Kind::BlockBegin: return "'{%'";
    case Token::Kind::BlockEnd: return "end of statement block '%}'";
    case Token::Kind::String: return "string literal";
    case Token::Kind::Int:
    case Token::Kind::Float: return "number '" + t.text + "'";
    case Token::Kind::End: return "end of template";
    default: return "'" + t.text + "'";
  }
}

// Python's "unicode-escape" codec, which Jinja2 applies to string literals.
std::string unescape_string(const std::string& raw, int line) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    auto read_hex = [&](std::size_t count) -> char32_t {
      char32_t v = 0;
      for (std::size_t k = 1; k <= count; ++k) {
        if (i + k >= raw.size()) fail_syntax(line, "truncated escape in string literal");
        const char h = raw[i + k];
        int d;
        if (h >= '0' && h <= '9') {
          d = h - '0';
        } else if (h >= 'a' && h <= 'f') {
          d = h - 'a' + 10;
        } else if (h >= 'A' && h <= 'F') {
          d = h - 'A' + 10;
        } else {
          fail_syntax(line, "bad hex digit in string literal escape");
        }
        v = v * 16 + static_cast<char32_t>(d);
      }
      i += count;
      return v;
    };
    switch (c) {
      case '\n': break;  // backslash-newline is a line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': append_utf8(out, read_hex(2)); break;
      case 'u': append_utf8(out, read_hex(4)); break;
      case 'U': {
        const char32_t cp = read_hex(8);
        if (cp > 0x10FFFF) fail_syntax(line, "\\U escape out of range in string literal");
        append_utf8(out, cp);
        break;
      }
      case 'N': fail_unsupported(line, "\\N{...} escape in string literal");
      default:
        if (c >= '0' && c <= '7') {
          char32_t v = static_cast<char32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7';
               ++k) {
            v = v * 8 + static_cast<char32_t>(raw[++i] - '0');
          }
          append_utf8(out, v);
        } else {
          // Unknown escapes keep their backslash, as Python does.
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& source, const Options& options) : src_(source), opt_(options) {}

  std::vector<Token> run() {
    bool line_starting = true;  // jinja2: did the previous match end with a newline?
    while (pos_ < src_.size()) {
      const std::size_t tag = find_tag(pos_);
      const std::size_t text_end = tag == std::string::npos ? src_.size() : tag;
      std::string text = src_.substr(pos_, text_end - pos_);
      const int text_line = line_;
      if (tag == std::string::npos) {
        emit_data(std::move(text), text_line);
        advance(src_.size());
        break;
      }
      const char kind = src_[tag + 1];
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const bool has_mod = mod == '-' || mod == '+';
      if (mod == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (mod != '+' && opt_.lstrip_blocks && kind != '{') {
        lstrip_line(text, line_starting);
      }
      emit_data(std::move(text), text_line);
      advance(tag + 2 + (has_mod ? 1 : 0));
      if (kind == '#') {
        line_starting = lex_comment();
      } else if (kind == '%' && at_raw()) {
        line_starting = lex_raw();
      } else {
        line_starting = lex_tag(kind == '%');
      }
    }
    tokens_.push_back(Token{Token::Kind::End, "", 0, 0.0, line_});
    return std::move(tokens_);
  }

 private:
  static bool inline_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

  // lstrip_blocks: drop spaces/tabs between the start of the line and a block/comment tag.
  void lstrip_line(std::string& text, bool line_starting) const {
    const std::size_t nl = text.rfind('\n');
    const std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), inline_space)) {
      text.resize(l_pos);
    }
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void advance(std::size_t to) {
    for (std::size_t i = pos_; i < to; ++i) {
      if (src_[i] == '\n') ++line_;
    }
    pos_ = to;
  }

  void emit_data(std::string text, int line) {
    if (text.empty()) return;
    tokens_.push_back(Token{Token::Kind::Data, std::move(text), 0, 0.0, line});
  }

  bool starts_with(std::size_t at, std::string_view s) const {
    return src_.compare(at, s.size(), s) == 0;
  }

  // Consumes the closing marker at pos_ (length len) plus the whitespace control that follows.
  // Returns whether the consumed text ended with a newline (jinja2's line_starting).
  bool finish_tag(std::size_t len, char mod, bool trims) {
    std::size_t after = pos_ + len;
    if (mod == '-') {
      while (after < src_.size() && is_py_space(src_[after])) ++after;
    } else if (mod != '+' && trims && opt_.trim_blocks && after < src_.size() &&
               src_[after] == '\n') {
      ++after;
    }
    advance(after);
    return src_[after - 1] == '\n';
  }

  bool lex_comment() {
    const int start_line = line_;
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail_syntax(start_line, "unterminated comment '{#'");
    char mod = '\0';
    if (end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')) mod = src_[end - 1];
    advance(end);
    return finish_tag(2, mod, true);
  }

  // Is the block tag starting at pos_ `{% raw %}`? Its content is not lexed at all.
  bool at_raw() const {
    std::size_t i = pos_;
    while (i < src_.size() && is_py_space(src_[i])) ++i;
    if (!starts_with(i, "raw")) return false;
    i += 3;
    while (i < src_.size() && is_py_space(src_[i])) ++i;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    return starts_with(i, "%}");
  }

  bool lex_raw() {
    const int start_line = line_;
    // Close the opening tag. jinja2 strips after `-%}` but applies no trim_blocks here.
    std::size_t i = src_.find("%}", pos_);
    const char mod = src_[i - 1] == '-' ? '-' : '\0';
    advance(i);
    bool line_starting = finish_tag(2, mod, false);
    // Find `{%[-+]? endraw [-+]?%}`.
    for (std::size_t at = src_.find("{%", pos_); at != std::string::npos;
         at = src_.find("{%", at + 1)) {
      std::size_t j = at + 2;
      const char open_mod = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : '\0';
      if (open_mod != '\0') ++j;
      while (j < src_.size() && is_py_space(src_[j])) ++j;
      if (!starts_with(j, "endraw")) continue;
      j += 6;
      while (j < src_.size() && is_py_space(src_[j])) ++j;
      const char close_mod =
          j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : '\0';
      if (close_mod != '\0') ++j;
      if (!starts_with(j, "%}")) continue;
      std::string text = src_.substr(pos_, at - pos_);
      if (open_mod == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (open_mod != '+' && opt_.lstrip_blocks) {
        lstrip_line(text, line_starting);
      }
      emit_data(std::move(text), line_);
      advance(j);
      line_starting = finish_tag(2, close_mod, true);
      return line_starting;
    }
    fail_syntax(start_line, "missing '{% endraw %}' for '{% raw %}'");
  }

  // Tokenizes an expression tag up to its end marker. Returns line_starting for the lexer.
  bool lex_tag(bool block) {
    const int start_line = line_;
    tokens_.push_back(Token{block ? Token::Kind::BlockBegin : Token::Kind::VarBegin,
                            block ? "{%" : "{{", 0, 0.0, line_});
    int depth = 0;
    bool after_dot = false;
    while (true) {
      std::size_t i = pos_;
      while (i < src_.size() && is_py_space(src_[i])) ++i;
      advance(i);
      if (pos_ >= src_.size()) {
        fail_syntax(start_line, std::string("unexpected end of template, expected '") +
                                    (block ? "%}" : "}}") + "'");
      }
      if (depth == 0) {
        const std::string_view end = block ? "%}" : "}}";
        const char c = src_[pos_];
        if ((c == '-' || (c == '+' && block)) && starts_with(pos_ + 1, end)) {
          tokens_.push_back(Token{block ? Token::Kind::BlockEnd : Token::Kind::VarEnd,
                                  std::string(end), 0, 0.0, line_});
          advance(pos_ + 1);
          return finish_tag(2, c, block);
        }
        if (starts_with(pos_, end)) {
          tokens_.push_back(Token{block ? Token::Kind::BlockEnd : Token::Kind::VarEnd,
                                  std::string(end), 0, 0.0, line_});
          return finish_tag(2, '\0', block);
        }
      }
      Token t = lex_token(after_dot);
      after_dot = t.kind == Token::Kind::Op && t.text == ".";
      if (t.kind == Token::Kind::Op) {
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
      }
      tokens_.push_back(std::move(t));
    }
  }

  Token lex_token(bool after_dot) {
    const int line = line_;
    const char c = src_[pos_];
    if (c == '\'' || c == '"') {
      std::size_t i = pos_ + 1;
      while (i < src_.size() && src_[i] != c) {
        if (src_[i] == '\\') ++i;
        ++i;
      }
      if (i >= src_.size()) fail_syntax(line, "unterminated string literal");
      std::string raw = src_.substr(pos_ + 1, i - pos_ - 1);
      advance(i + 1);
      return Token{Token::Kind::String, unescape_string(raw, line), 0, 0.0, line};
    }
    if (ascii_digit(c)) {
      std::size_t i = pos_;
      auto digits = [&] {
        while (i < src_.size() && (ascii_digit(src_[i]) || src_[i] == '_')) ++i;
      };
      digits();
      bool is_float = false;
      // After a dot (foo.0.1) numbers are item indices, never floats.
      if (!after_dot && i + 1 < src_.size() && src_[i] == '.' && ascii_digit(src_[i + 1])) {
        ++i;
        digits();
        is_float = true;
      }
      if (!after_dot && i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
        if (j < src_.size() && ascii_digit(src_[j])) {
          i = j;
          digits();
          is_float = true;
        }
      }
      std::string text = src_.substr(pos_, i - pos_);
      std::string clean;
      for (const char ch : text) {
        if (ch != '_') clean += ch;
      }
      advance(i);
      Token t{is_float ? Token::Kind::Float : Token::Kind::Int, text, 0, 0.0, line};
      if (is_float) {
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), t.float_value);
        if (res.ec != std::errc()) fail_syntax(line, "bad float literal '" + text + "'");
      } else {
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), t.int_value);
        if (res.ec != std::errc()) fail_syntax(line, "integer literal out of range '" + text + "'");
      }
      return t;
    }
    if (ascii_alpha(c) || c == '_') {
      std::size_t i = pos_;
      while (i < src_.size() && (ascii_alpha(src_[i]) || ascii_digit(src_[i]) || src_[i] == '_')) {
        ++i;
      }
      Token t{Token::Kind::Name, src_.substr(pos_, i - pos_), 0, 0.0, line};
      advance(i);
      return t;
    }
    static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const auto op : kTwoChar) {
      if (starts_with(pos_, op)) {
        advance(pos_ + 2);
        return Token{Token::Kind::Op, std::string(op), 0, 0.0, line};
      }
    }
    static constexpr std::string_view kOneChar = "+-*/%~<>()[]{},.:|=;";
    if (kOneChar.find(c) != std::string_view::npos) {
      advance(pos_ + 1);
      return Token{Token::Kind::Op, std::string(1, c), 0, 0.0, line};
    }
    fail_syntax(line, std::string("unexpected character '") + c + "'");
  }

  const std::string& src_;
  Options opt_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

// ============================================================================================
// AST. Expressions evaluate to Values; statements write to the interpreter's output.
// ============================================================================================

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& input, CallArgs& args);

// Defined with the builtin tables further down; the parser resolves names through these so an
// unknown filter/test/method/function is reported when the template is loaded.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
bool is_known_method(std::string_view name);
FunctionPtr find_global(std::string_view name);

struct Expr {
  explicit Expr(int l) : line(l) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Counts the render's depth and work (Note [Template limits]), then runs eval_node.
  Value eval(Interpreter& in) const;
  virtual Value eval_node(Interpreter& in) const = 0;
  // The tallest operand's height (0 for a leaf); the parser sets `height` from it.
  virtual int tallest_child() const { return 0; }
  int line;
  int height = 1;
};
using ExprPtr = std::unique_ptr<Expr>;

int height_of(const ExprPtr& e) { return e ? e->height : 0; }
int height_of(const std::vector<ExprPtr>& es) {
  int h = 0;
  for (const auto& e : es) h = std::max(h, height_of(e));
  return h;
}

struct Literal : Expr {
  Literal(int l, Value v) : Expr(l), value(std::move(v)) {}
  Value eval_node(Interpreter&) const override { return value; }
  Value value;
};

struct NameRef : Expr {
  NameRef(int l, std::string n) : Expr(l), name(std::move(n)) {}
  Value eval_node(Interpreter& in) const override;
  std::string name;
};

// List literals and tuples alike.
struct ListLit : Expr {
  ListLit(int l, bool tuple) : Expr(l), is_tuple(tuple) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(items); }
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictLit : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    int h = 0;
    for (const auto& [k, v] : pairs) h = std::max({h, height_of(k), height_of(v)});
    return h;
  }
  std::vector<std::pair<ExprPtr, ExprPtr>> pairs;
};

struct GetAttr : Expr {
  GetAttr(int l, ExprPtr o, std::string n) : Expr(l), object(std::move(o)), name(std::move(n)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(object); }
  ExprPtr object;
  std::string name;
};

struct GetItem : Expr {
  GetItem(int l, ExprPtr o, ExprPtr i) : Expr(l), object(std::move(o)), index(std::move(i)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(object), height_of(index)); }
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    return std::max({height_of(object), height_of(start), height_of(stop), height_of(step)});
  }
  ExprPtr object, start, stop, step;  // start/stop/step may be null
};

struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  int height() const {
    int h = height_of(positional);
    for (const auto& [k, v] : keyword) h = std::max(h, height_of(v));
    return h;
  }
};

struct CallExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(callee), args.height()); }
  ExprPtr callee;
  ArgExprs args;
};

struct FilterExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(operand), args.height()); }
  ExprPtr operand;
  std::string name;
  FilterFn fn = nullptr;
  ArgExprs args;
};

struct TestExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(operand), args.height()); }
  ExprPtr operand;
  std::string name;
  TestFn fn = nullptr;
  ArgExprs args;
  bool negated = false;
};

// The captured body of {% filter %} / {% set x | f %} blocks, fed into their filter chain.
struct BlockInput : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
};

struct UnaryExpr : Expr {
  UnaryExpr(int l, char o, ExprPtr e) : Expr(l), op(o), operand(std::move(e)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(operand); }
  char op;  // '-', '+', '!' (not)
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(int l, std::string o, ExprPtr a, ExprPtr b)
      : Expr(l), op(std::move(o)), left(std::move(a)), right(std::move(b)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(left), height_of(right)); }
  std::string op;
  ExprPtr left, right;
};

struct LogicalExpr : Expr {
  LogicalExpr(int l, bool a, ExprPtr x, ExprPtr y)
      : Expr(l), is_and(a), left(std::move(x)), right(std::move(y)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(left), height_of(right)); }
  bool is_and;
  ExprPtr left, right;
};

struct CompareExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    int h = height_of(first);
    for (const auto& [op, e] : rest) h = std::max(h, height_of(e));
    return h;
  }
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // op is ==, !=, <, <=, >, >=, in, notin
};

struct CondExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    return std::max({height_of(cond), height_of(then), height_of(otherwise)});
  }
  ExprPtr cond, then, otherwise;  // otherwise may be null (-> Undefined)
};

enum class Flow { Normal, Break, Continue };

struct Stmt {
  explicit Stmt(int l) : line(l) {}
  virtual ~Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  virtual Flow exec(Interpreter& in) const = 0;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(l), text(std::move(t)) {}
  Flow exec(Interpreter& in) const override;
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(int l, ExprPtr e) : Stmt(l), expr(std::move(e)) {}
  Flow exec(Interpreter& in) const override;
  ExprPtr expr;
};

struct IfStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body otherwise;
};

// Assignment target of for/set: one name, several names to unpack, or `ns.attr`.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;
  std::string attr;  // non-empty: assign names[0].attr (namespace attribute)
};

struct ForStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  Body body;
  Body otherwise;
};

struct SetStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr filters;  // chain over BlockInput; may be null
  Body body;
};

struct MacroStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Value invoke(Interpreter& in, CallArgs& args) const;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
};

struct FilterBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  ExprPtr filters;
  Body body;
};

struct WithStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};

// {% generation %} (transformers' assistant-mask extension) renders its body unchanged.
struct PlainBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Body body;
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(int l, bool b) : Stmt(l), is_break(b) {}
  Flow exec(Interpreter&) const override { return is_break ? Flow::Break : Flow::Continue; }
  bool is_break;
};

// ============================================================================================
// Parser: recursive descent with Jinja2's precedence (jinja2/parser.py):
//   condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix/filters
// ============================================================================================

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_template() {
    std::string which;
    Body body = parse_body({}, which, 0, "");
    // Calls can only reach builtins or macros: the context is JSON and holds no callables.
    for (const auto& [name, line] : called_) {
      if (declared_.count(name) != 0 || find_global(name) != nullptr) continue;
      if (name == "caller") fail_unsupported(line, "'caller()' (call blocks)");
      fail_unsupported(line, "function '" + name + "()'");
    }
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(std::size_t ahead = 0) const {
    const std::size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool at_op(std::string_view op) const {
    return peek().kind == Token::Kind::Op && peek().text == op;
  }
  bool at_name(std::string_view name) const {
    return peek().kind == Token::Kind::Name && peek().text == name;
  }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    fail_syntax(peek().line, "expected " + expected + ", got " + describe(peek()));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name(const std::string& what) {
    if (peek().kind != Token::Kind::Name) unexpected(what);
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != Token::Kind::BlockEnd) unexpected("end of statement block '%}'");
    next();
  }

  // ---- statements ----

  // Parses until one of `ends` appears as a block tag; consumes the tag name and stores it in
  // `which`, leaving the rest of that tag (e.g. an elif condition) to the caller.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string& which, int open_line,
                  std::string_view opener) {
    Body body;
    while (true) {
      const Token& t = peek();
      switch (t.kind) {
        case Token::Kind::End:
          if (ends.size() == 0) return body;
          fail_syntax(open_line, "'{% " + std::string(opener) +
                                     " %}' is never closed (expected '{% " +
                                     std::string(*(ends.end() - 1)) + " %}' before the end)");
        case Token::Kind::Data:
          body.push_back(std::make_unique<TextStmt>(t.line, t.text));
          next();
          break;
        case Token::Kind::VarBegin: {
          next();
          ExprPtr e = parse_tuple(true);
          if (peek().kind != Token::Kind::VarEnd) unexpected("end of print statement '}}'");
          next();
          body.push_back(std::make_unique<OutputStmt>(t.line, std::move(e)));
          break;
        }
        case Token::Kind::BlockBegin: {
          next();
          if (peek().kind != Token::Kind::Name) unexpected("a tag name");
          const std::string& name = peek().text;
          if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
            which = next().text;
            return body;
          }
          body.push_back(parse_statement());
          break;
        }
        default: unexpected("template text or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    const int line = peek().line;
    DepthGuard guard(depth_, line);  // nested blocks recurse here as expressions do
    const std::string tag = next().text;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "filter") return parse_filter_block(line);
    if (tag == "with") return parse_with(line);
    if (tag == "generation") {
      auto s = std::make_unique<PlainBlockStmt>(line);
      expect_block_end();
      std::string which;
      s->body = parse_body({"endgeneration"}, which, line, "generation");
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail_syntax(line, "'{% " + tag + " %}' outside of a for loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(line, tag == "break");
    }
    static const std::set<std::string, std::less<>> kClosers = {
        "elif", "else", "endif", "endfor", "endset", "endmacro", "endfilter", "endwith",
        "endgeneration", "endraw", "endcall", "endblock"};
    if (kClosers.count(tag) != 0) fail_syntax(line, "unexpected '{% " + tag + " %}'");
    fail_unsupported(line, "tag '{% " + tag + " %}'");
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_unique<IfStmt>(line);
    ExprPtr cond = parse_expression();
    expect_block_end();
    while (true) {
      std::string which;
      Body body = parse_body({"elif", "else", "endif"}, which, line, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (which == "elif") {
        cond = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (which == "else") {
        s->otherwise = parse_body({"endif"}, which, line, "if");
        expect_block_end();
      }
      return s;
    }
  }

  Target parse_target(bool allow_attr, bool allow_unpack) {
    Target t;
    const bool parens = allow_unpack && skip_op("(");
    t.names.push_back(expect_name("a variable name"));
    if (allow_attr && !parens && at_op(".")) {
      next();
      t.attr = expect_name("an attribute name");
      return t;
    }
    while (allow_unpack && skip_op(",")) {
      t.unpack = true;
      if (peek().kind != Token::Kind::Name || at_name("in")) break;
      t.names.push_back(expect_name("a variable name"));
    }
    if (parens) {
      t.unpack = true;
      expect_op(")");
    }
    for (const auto& n : t.names) declared_.insert(n);
    return t;
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_unique<ForStmt>(line);
    s->target = parse_target(false, true);
    if (!skip_name("in")) unexpected("'in'");
    s->iter = parse_tuple(false);
    if (skip_name("if")) s->filter = parse_expression();
    if (at_name("recursive")) fail_unsupported(peek().line, "recursive for loops");
    expect_block_end();
    std::string which;
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"}, which, line, "for");
    --loop_depth_;
    expect_block_end();
    if (which == "else") {
      s->otherwise = parse_body({"endfor"}, which, line, "for");
      expect_block_end();
    }
    return s;
  }

  StmtPtr parse_set(int line) {
    Target target = parse_target(true, true);
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(line);
      s->target = std::move(target);
      s->value = parse_tuple(true);
      expect_block_end();
      return s;
    }
    auto s = std::make_unique<SetBlockStmt>(line);
    s->target = std::move(target);
    if (s->target.unpack) fail_syntax(line, "a block {% set %} assigns a single name");
    if (at_op("|")) {
      ExprPtr chain = std::make_unique<BlockInput>(line);
      while (skip_op("|")) chain = parse_filter(std::move(chain));
      s->filters = std::move(chain);
    }
    expect_block_end();
    std::string which;
    s->body = parse_body({"endset"}, which, line, "set");
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_unique<MacroStmt>(line);
    s->name = expect_name("a macro name");
    declared_.insert(s->name);
    expect_op("(");
    while (!skip_op(")")) {
      if (!s->params.empty()) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      std::string param = expect_name("a parameter name");
      declared_.insert(param);
      ExprPtr def;
      if (skip_op("=")) def = parse_expression();
      s->params.emplace_back(std::move(param), std::move(def));
    }
    expect_block_end();
    // break/continue cannot cross a macro boundary.
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string which;
    s->body = parse_body({"endmacro"}, which, line, "macro");
    loop_depth_ = saved_loops;
    if (peek().kind == Token::Kind::Name) next();  // optional `{% endmacro name %}`
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = std::make_unique<FilterBlockStmt>(line);
    ExprPtr chain = parse_filter(std::make_unique<BlockInput>(line));
    while (skip_op("|")) chain = parse_filter(std::move(chain));
    s->filters = std::move(chain);
    expect_block_end();
    std::string which;
    s->body = parse_body({"endfilter"}, which, line, "filter");
    expect_block_end();
    return s;
  }

  StmtPtr parse_with(int line) {
    auto s = std::make_unique<WithStmt>(line);
    while (peek().kind != Token::Kind::BlockEnd) {
      std::string name = expect_name("a variable name");
      declared_.insert(name);
      expect_op("=");
      s->assignments.emplace_back(std::move(name), parse_expression());
      if (!skip_op(",")) break;
    }
    expect_block_end();
    std::string which;
    s->body = parse_body({"endwith"}, which, line, "with");
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // Recursion guard: each nesting level of an expression costs a few native frames.
  struct DepthGuard {
    DepthGuard(int& d, int line) : depth(d) {
      if (++depth > kMaxNesting) fail_syntax(line, "expression nested too deeply");
    }
    ~DepthGuard() { --depth; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    int& depth;
  };

  // Sets a new node's height from its operands' and refuses a tree taller than kMaxNesting: evaluating
  // and destroying an expression recurse once per level, and the chain loops below (a + b + c ...,
  // x.a.b.c, x|f|g) build levels without the parser itself recursing. See Note [Template limits].
  ExprPtr finish(ExprPtr node) {
    node->height = node->tallest_child() + 1;
    if (node->height > kMaxNesting) {
      fail_syntax(node->line, "expression nested deeper than " + std::to_string(kMaxNesting) +
                                  " levels (each link of an operator, filter or attribute chain is a level)");
    }
    return node;
  }

  bool at_tuple_end() const {
    const auto k = peek().kind;
    return k == Token::Kind::VarEnd || k == Token::Kind::BlockEnd || at_op(")");
  }

  // Comma-separated expressions without brackets form a tuple (`{% set a = 1, 2 %}`).
  ExprPtr parse_tuple(bool with_condexpr) {
    const int line = peek().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (at_tuple_end()) break;
      items.push_back(with_condexpr ? parse_expression() : parse_or());
      if (at_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (items.empty()) unexpected("an expression");
      return std::move(items[0]);
    }
    auto t = std::make_unique<ListLit>(line, true);
    t->items = std::move(items);
    return finish(std::move(t));
  }

  ExprPtr parse_expression() {
    DepthGuard guard(depth_, peek().line);
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      const int line = next().line;
      auto c = std::make_unique<CondExpr>(line);
      c->cond = parse_or();
      if (skip_name("else")) c->otherwise = parse_expression();
      c->then = std::move(expr);
      expr = finish(std::move(c));
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      const int line = next().line;
      left = finish(std::make_unique<LogicalExpr>(line, false, std::move(left), parse_and()));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      const int line = next().line;
      left = finish(std::make_unique<LogicalExpr>(line, true, std::move(left), parse_not()));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      const int line = next().line;
      DepthGuard guard(depth_, line);
      return finish(std::make_unique<UnaryExpr>(line, '!', parse_not()));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    std::vector<std::pair<std::string, ExprPtr>> rest;
    while (true) {
      if (peek().kind == Token::Kind::Op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op("<=") || at_op(">") || at_op(">="))) {
        std::string op = next().text;
        rest.emplace_back(std::move(op), parse_math1());
      } else if (skip_name("in")) {
        rest.emplace_back("in", parse_math1());
      } else if (at_name("not") && peek(1).kind == Token::Kind::Name && peek(1).text == "in") {
        next();
        next();
        rest.emplace_back("notin", parse_math1());
      } else {
        break;
      }
    }
    if (rest.empty()) return first;
    auto c = std::make_unique<CompareExpr>(line);
    c->first = std::move(first);
    c->rest = std::move(rest);
    return finish(std::move(c));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = next();
      left = finish(std::make_unique<BinaryExpr>(op.line, op.text, std::move(left), parse_concat()));
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_op("~")) {
      const int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(line, "~", std::move(left), parse_math2()));
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = next();
      left = finish(std::make_unique<BinaryExpr>(op.line, op.text, std::move(left), parse_pow()));
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_op("**")) {
      const int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(line, "**", std::move(left), parse_unary(true)));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const int line = peek().line;
    DepthGuard guard(depth_, line);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      const char op = next().text[0];
      node = finish(std::make_unique<UnaryExpr>(line, op, parse_unary(false)));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    const int line = t.line;
    switch (t.kind) {
      case Token::Kind::Name: {
        const std::string name = next().text;
        if (name == "true" || name == "True") return std::make_unique<Literal>(line, Value::boolean(true));
        if (name == "false" || name == "False") return std::make_unique<Literal>(line, Value::boolean(false));
        if (name == "none" || name == "None") return std::make_unique<Literal>(line, Value::none());
        return std::make_unique<NameRef>(line, name);
      }
      case Token::Kind::String: {
        // Adjacent string literals concatenate, as in Python.
        std::string s;
        while (peek().kind == Token::Kind::String) s += next().text;
        return std::make_unique<Literal>(line, Value::string(std::move(s)));
      }
      case Token::Kind::Int: return std::make_unique<Literal>(line, Value::integer(next().int_value));
      case Token::Kind::Float: return std::make_unique<Literal>(line, Value::number(next().float_value));
      case Token::Kind::Op:
        if (t.text == "(") {
          next();
          if (skip_op(")")) return std::make_unique<ListLit>(line, true);  // empty tuple
          ExprPtr inner = parse_tuple(true);
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto list = std::make_unique<ListLit>(line, false);
          while (!skip_op("]")) {
            if (!list->items.empty()) {
              expect_op(",");
              if (skip_op("]")) break;
            }
            list->items.push_back(parse_expression());
          }
          return finish(std::move(list));
        }
        if (t.text == "{") {
          next();
          auto dict = std::make_unique<DictLit>(line);
          while (!skip_op("}")) {
            if (!dict->pairs.empty()) {
              expect_op(",");
              if (skip_op("}")) break;
            }
            ExprPtr key = parse_expression();
            expect_op(":");
            dict->pairs.emplace_back(std::move(key), parse_expression());
          }
          return finish(std::move(dict));
        }
        break;
      default: break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (at_op(".")) {
        const int line = next().line;
        const Token& t = next();
        if (t.kind == Token::Kind::Name) {
          node = finish(std::make_unique<GetAttr>(line, std::move(node), t.text));
        } else if (t.kind == Token::Kind::Int) {
          node = finish(std::make_unique<GetItem>(line, std::move(node),
                                                  std::make_unique<Literal>(line, Value::integer(t.int_value))));
        } else {
          fail_syntax(t.line, "expected an attribute name after '.', got " + describe(t));
        }
      } else if (at_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = next().line;  // '['
    ExprPtr start;
    if (!at_op(":")) start = parse_expression();
    if (!at_op(":")) {
      expect_op("]");
      return finish(std::make_unique<GetItem>(line, std::move(node), std::move(start)));
    }
    next();  // ':'
    auto s = std::make_unique<SliceExpr>(line);
    s->object = std::move(node);
    s->start = std::move(start);
    if (!at_op("]") && !at_op(":")) s->stop = parse_expression();
    if (skip_op(":") && !at_op("]")) s->step = parse_expression();
    expect_op("]");
    return finish(std::move(s));
  }

  ArgExprs parse_args() {
    // The '(' has been consumed.
    ArgExprs args;
    bool first = true;
    while (!skip_op(")")) {
      if (!first) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      first = false;
      if (at_op("*") || at_op("**")) fail_unsupported(peek().line, "*args / **kwargs in calls");
      if (peek().kind == Token::Kind::Name && peek(1).kind == Token::Kind::Op && peek(1).text == "=") {
        std::string name = next().text;
        next();
        args.keyword.emplace_back(std::move(name), parse_expression());
      } else {
        if (!args.keyword.empty()) {
          fail_syntax(peek().line, "positional argument follows keyword argument");
        }
        args.positional.push_back(parse_expression());
      }
    }
    return args;
  }

  ExprPtr parse_call(ExprPtr callee) {
    const int line = next().line;  // '('
    if (const auto* attr = dynamic_cast<const GetAttr*>(callee.get())) {
      if (!is_known_method(attr->name)) fail_unsupported(line, "method '." + attr->name + "()'");
    } else if (const auto* name = dynamic_cast<const NameRef*>(callee.get())) {
      called_.emplace_back(name->name, line);
    }
    auto call = std::make_unique<CallExpr>(line);
    call->callee = std::move(callee);
    call->args = parse_args();
    return finish(std::move(call));
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (skip_op("|")) {
        node = parse_filter(std::move(node));
      } else if (at_name("is")) {
        node = parse_test(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter(ExprPtr operand) {
    const int line = peek().line;
    auto f = std::make_unique<FilterExpr>(line);
    f->name = expect_name("a filter name");
    f->fn = find_filter(f->name);
    if (f->fn == nullptr) fail_unsupported(line, "filter '" + f->name + "'");
    f->operand = std::move(operand);
    if (skip_op("(")) f->args = parse_args();
    return finish(std::move(f));
  }

  ExprPtr parse_test(ExprPtr operand) {
    const int line = next().line;  // 'is'
    auto t = std::make_unique<TestExpr>(line);
    t->negated = skip_name("not");
    t->name = expect_name("a test name");
    t->fn = find_test(t->name);
    if (t->fn == nullptr) fail_unsupported(line, "test '" + t->name + "'");
    t->operand = std::move(operand);
    if (skip_op("(")) {
      t->args = parse_args();
    } else {
      // `x is divisibleby 3`, `x is sameas false`: one bare argument, as jinja2 allows.
      const Token& p = peek();
      static const std::set<std::string, std::less<>> kStop = {"else", "or", "and", "if",
                                                               "is", "in", "not"};
      const bool starts_arg =
          p.kind == Token::Kind::String || p.kind == Token::Kind::Int ||
          p.kind == Token::Kind::Float || at_op("[") || at_op("{") ||
          (p.kind == Token::Kind::Name && kStop.count(p.text) == 0);
      if (starts_arg) t->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return finish(std::move(t));
  }

  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
  std::set<std::string, std::less<>> declared_;     // names any set/for/macro/with introduces
  std::vector<std::pair<std::string, int>> called_;  // plain function calls, checked at the end
};

}  // namespace

struct Template::Program {
  Body body;
};

namespace {

// ============================================================================================
// Interpreter.
// ============================================================================================

// A variable scope. Jinja2 gives each for-loop iteration, macro call and {% with %} a fresh one;
// {% if %} does not create one. Lookups fall through to the parent.
struct Frame {
  Frame* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const {
    for (const auto& [k, v] : vars) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  void set(const std::string& name, Value value) {
    for (auto& entry : vars) {
      if (entry.first == name) {
        entry.second = std::move(value);
        return;
      }
    }
    vars.emplace_back(name, std::move(value));
  }
};

class Interpreter {
 public:
  explicit Interpreter(std::string* out) : out(out) {}

  Value lookup(const std::string& name) const {
    for (const Frame* f = frame; f != nullptr; f = f->parent) {
      if (const Value* v = f->find(name)) return *v;
    }
    if (FunctionPtr fn = find_global(name)) return Value::function(std::move(fn));
    return Value::undefined("'" + name + "' is undefined");
  }

  // One level of the render's recursion (an expression or a block) and one step of its work;
  // see Note [Template limits].
  class Level {
   public:
    Level(Interpreter& in, int line) : in_(in) {
      if (++in_.depth > kMaxNesting) {
        fail_render(line, "rendering recursed deeper than " + std::to_string(kMaxNesting) +
                              " levels (nested blocks, expressions and macro calls)");
      }
      in_.charge(1, line);
    }
    ~Level() { --in_.depth; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    Interpreter& in_;
  };

  void charge(std::int64_t steps, int line) {
    work += steps;
    if (work > kMaxRenderSteps) {
      fail_render(line, "rendering took more than " + std::to_string(kMaxRenderSteps) +
                            " steps (the template's work limit)");
    }
  }

  // Appends rendered text, within kMaxTextBytes.
  void write(std::string_view text, int line) {
    check_text_size(out->size() + text.size(), line, "the rendered text");
    out->append(text);
  }

  Flow exec(const Body& body) {
    if (body.empty()) return Flow::Normal;
    Level level(*this, body.front()->line);
    for (const auto& stmt : body) {
      const Flow flow = stmt->exec(*this);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  Frame globals;          // the render context plus top-level {% set %}s
  Frame* frame = &globals;
  std::string* out;       // where output goes; swapped while capturing macro/set/filter bodies
  Value block_input;      // see BlockInput
  int macro_depth = 0;
  int depth = 0;          // eval/exec recursion, see Level
  std::int64_t work = 0;  // steps so far, see charge()
};

// Pushes a scope for the lifetime of the object; restores the previous one even on throw.
class ScopeGuard {
 public:
  ScopeGuard(Interpreter& in, Frame* parent) : in_(in), saved_(in.frame) {
    frame_.parent = parent;
    in_.frame = &frame_;
  }
  ~ScopeGuard() { in_.frame = saved_; }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  Frame& frame() { return frame_; }

 private:
  Interpreter& in_;
  Frame frame_;
  Frame* saved_;
};

// Redirects output into a buffer for the lifetime of the object.
class CaptureGuard {
 public:
  explicit CaptureGuard(Interpreter& in) : in_(in), saved_(in.out) { in_.out = &buffer_; }
  ~CaptureGuard() { in_.out = saved_; }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
  std::string take() { return std::move(buffer_); }

 private:
  Interpreter& in_;
  std::string buffer_;
  std::string* saved_;
};

// ---- argument binding for builtins ----

using Bound = std::vector<std::optional<Value>>;

// Python-style binding of positional and keyword arguments to a fixed parameter list.
// Parameters the caller did not pass stay nullopt.
Bound bind(CallArgs& args, std::initializer_list<std::string_view> params, const std::string& what) {
  Bound out(params.size());
  if (args.positional.size() > params.size()) {
    fail_render(args.line, what + " takes at most " + std::to_string(params.size()) +
                               " argument(s), " + std::to_string(args.positional.size()) + " given");
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) out[i] = std::move(args.positional[i]);
  for (auto& [key, value] : args.keyword) {
    const auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) fail_render(args.line, what + " got an unexpected keyword argument '" + key + "'");
    auto& slot = out[static_cast<std::size_t>(it - params.begin())];
    if (slot) fail_render(args.line, what + " got multiple values for argument '" + key + "'");
    slot = std::move(value);
  }
  return out;
}

// Treats None like "not passed", as Python signatures with `=None` defaults do.
bool given(const std::optional<Value>& v) { return v && !v->is_none(); }

const Value& require(const std::optional<Value>& v, const std::string& what, std::string_view param, int line) {
  if (!v) fail_render(line, what + " missing required argument '" + std::string(param) + "'");
  return *v;
}

std::int64_t as_int(const Value& v, const std::string& what, int line) {
  if (v.is_int()) return v.as<std::int64_t>();
  if (v.is_bool()) return v.as<bool>() ? 1 : 0;
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects an integer, got '" + type_name(v) + "'");
}

double as_double(const Value& v, const std::string& what, int line) {
  if (v.is_float()) return v.as<double>();
  if (v.is_int()) return static_cast<double>(v.as<std::int64_t>());
  if (v.is_bool()) return v.as<bool>() ? 1.0 : 0.0;
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects a number, got '" + type_name(v) + "'");
}

const std::string& as_string(const Value& v, const std::string& what, int line) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) fail_undefined(v, line);
  fail_render(line, what + " expects a string, got '" + type_name(v) + "'");
}

// ---- access ----

Value get_attr(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) fail_undefined(obj, line);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.as<NamespacePtr>()->attrs.find(name)) return *v;
  }
  // jinja2 returns Undefined for a missing attribute of a defined object; only using it fails.
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

// Python index normalisation; nullopt when out of range.
std::optional<std::size_t> normalize_index(std::int64_t index, std::size_t size) {
  const auto n = static_cast<std::int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<std::size_t>(index);
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) fail_undefined(obj, line);
  if (obj.is_dict() || obj.is_namespace()) {
    if (key.is_string()) return get_attr(obj, key.str(), line);
    return Value::undefined("'" + type_name(obj) + " object' has no element " + to_repr(key));
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    const std::int64_t index = as_int(key, "index", line);
    if (obj.is_list()) {
      if (auto i = normalize_index(index, obj.items().size())) return obj.items()[*i];
    } else {
      const auto offsets = utf8_offsets(obj.str());
      if (auto i = normalize_index(index, offsets.size() - 1)) {
        return Value::string(obj.str().substr(offsets[*i], offsets[*i + 1] - offsets[*i]));
      }
    }
    return Value::undefined("'" + type_name(obj) + " object' has no element " + std::to_string(index));
  }
  if (key.is_string()) return get_attr(obj, key.str(), line);
  return Value::undefined("'" + type_name(obj) + " object' has no element " + to_repr(key));
}

// Python slice.indices() followed by the index walk.
std::vector<std::size_t> slice_positions(std::size_t size, const Value& start_v, const Value& stop_v,
                                         const Value& step_v, int line) {
  auto opt_int = [&](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    return as_int(v, "slice", line);
  };
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t step = opt_int(step_v).value_or(1);
  if (step == 0) fail_render(line, "slice step cannot be zero");
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const std::int64_t start = clamp(opt_int(start_v), step < 0 ? n - 1 : 0);
  const std::int64_t stop = clamp(opt_int(stop_v), step < 0 ? -1 : n);
  std::vector<std::size_t> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

// What `for x in v` iterates over.
ListPtr iterate(const Value& v, int line) {
  if (v.is_list()) return v.as<ListPtr>();
  List items;
  if (v.is_undefined()) return std::make_shared<const List>();
  if (v.is_dict()) {
    for (const auto& entry : v.dict().entries) items.push_back(Value::string(entry.first));
  } else if (v.is_string()) {
    for (auto& ch : utf8_chars(v.str())) items.push_back(Value::string(std::move(ch)));
  } else {
    fail_render(line, "'" + type_name(v) + "' object is not iterable");
  }
  return std::make_shared<const List>(std::move(items));
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (!item.is_string()) {
      fail_render(line, "'in <string>' requires string as left operand, not " + type_name(item));
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& x : container.items()) {
      if (equal(x, item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return item.is_string() && container.dict().find(item.str()) != nullptr;
  fail_render(line, "argument of type '" + type_name(container) + "' is not iterable");
}

// ---- operators ----

std::string py_percent_format(const std::string& fmt, const Value& args, int line);

Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
  if (a.is_undefined()) fail_undefined(a, line);
  if (b.is_undefined()) fail_undefined(b, line);
  auto type_error = [&]() -> Value {
    if (op == "+" && a.is_string()) {
      fail_render(line, "can only concatenate str (not \"" + type_name(b) + "\") to str");
    }
    fail_render(line, "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
                          type_name(b) + "'");
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

// ---- expression evaluation ----

CallArgs eval_args(Interpreter& in, const ArgExprs& exprs, int line) {
  CallArgs args;
  args.line = line;
  args.positional.reserve(exprs.positional.size());
  for (const auto& e : exprs.positional) args.positional.push_back(e->eval(in));
  for (const auto& [name, e] : exprs.keyword) args.keyword.emplace_back(name, e->eval(in));
  return args;
}

Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args);

Value Expr::eval(Interpreter& in) const {
  Interpreter::Level level(in, line);
  return eval_node(in);
}

Value NameRef::eval_node(Interpreter& in) const { return in.lookup(name); }

Value ListLit::eval_node(Interpreter& in) const {
  List out;
  out.reserve(items.size());
  out.is_tuple = is_tuple;
  for (const auto& e : items) out.push_back(e->eval(in));
  return Value::list(std::move(out));
}

Value DictLit::eval_node(Interpreter& in) const {
  Dict d;
  for (const auto& [k, v] : pairs) {
    Value key = k->eval(in);
    if (!key.is_string()) {
      // Python allows any hashable key; JSON-shaped values only ever have string keys.
      fail_unsupported(line, "dict literal key of type '" + type_name(key) + "' (only strings)");
    }
    d.set(key.str(), v->eval(in));
  }
  return Value::dict(std::move(d));
}

Value GetAttr::eval_node(Interpreter& in) const { return get_attr(object->eval(in), name, line); }

Value GetItem::eval_node(Interpreter& in) const {
  Value obj = object->eval(in);
  return get_item(obj, index->eval(in), line);
}

Value SliceExpr::eval_node(Interpreter& in) const {
  Value obj = object->eval(in);
  if (obj.is_undefined()) fail_undefined(obj, line);
  auto opt = [&](const ExprPtr& e) { return e ? e->eval(in) : Value::none(); };
  const Value a = opt(start);
  const Value b = opt(stop);
  const Value c = opt(step);
  if (obj.is_list()) {
    List out;
    for (const std::size_t i : slice_positions(obj.items().size(), a, b, c, line)) out.push_back(obj.items()[i]);
    return Value::list(std::move(out));
  }
  if (obj.is_string()) {
    const auto offsets = utf8_offsets(obj.str());
    std::string out;
    for (const std::size_t i : slice_positions(offsets.size() - 1, a, b, c, line)) {
      out.append(obj.str(), offsets[i], offsets[i + 1] - offsets[i]);
    }
    return Value::string(std::move(out));
  }
  fail_render(line, "'" + type_name(obj) + "' object is not subscriptable");
}

// What a builtin walking over `v` may cost: its items, or its bytes in 64-byte steps.
std::int64_t walk_cost(const Value& v) {
  if (v.is_list()) return static_cast<std::int64_t>(v.items().size());
  if (v.is_dict()) return static_cast<std::int64_t>(v.dict().entries.size());
  if (v.is_string()) return static_cast<std::int64_t>(v.str().size() / 64);
  return 0;
}

Value CallExpr::eval_node(Interpreter& in) const {
  if (const auto* attr = dynamic_cast<const GetAttr*>(callee.get())) {
    Value obj = attr->object->eval(in);
    CallArgs a = eval_args(in, args, line);
    in.charge(walk_cost(obj), line);
    for (const auto& arg : a.positional) in.charge(walk_cost(arg), line);
    return call_method(in, obj, attr->name, a);
  }
  Value fn = callee->eval(in);
  CallArgs a = eval_args(in, args, line);
  if (fn.is_function()) return fn.as<FunctionPtr>()->invoke(in, a);
  if (fn.is_undefined()) fail_undefined(fn, line);
  fail_render(line, "'" + type_name(fn) + "' object is not callable");
}

Value FilterExpr::eval_node(Interpreter& in) const {
  Value input = operand->eval(in);
  CallArgs a = eval_args(in, args, line);
  in.charge(walk_cost(input), line);
  return fn(in, input, a);
}

Value TestExpr::eval_node(Interpreter& in) const {
  Value input = operand->eval(in);
  CallArgs a = eval_args(in, args, line);
  return Value::boolean(fn(in, input, a) != negated);
}

Value BlockInput::eval_node(Interpreter& in) const { return in.block_input; }

Value UnaryExpr::eval_node(Interpreter& in) const {
  Value v = operand->eval(in);
  if (op == '!') return Value::boolean(!truthy(v));
  if (v.is_undefined()) fail_undefined(v, line);
  if (v.is_float()) return Value::number(op == '-' ? -v.as<double>() : v.as<double>());
  if (v.is_int() || v.is_bool()) {
    const std::int64_t x = as_int(v, "unary", line);
    if (op == '+') return Value::integer(x);
    if (x == std::numeric_limits<std::int64_t>::min()) fail_render(line, "integer overflow in '-'");
    return Value::integer(-x);
  }
  fail_render(line, std::string("bad operand type for unary ") + op + ": '" + type_name(v) + "'");
}

Value BinaryExpr::eval_node(Interpreter& in) const {
  Value a = left->eval(in);
  Value b = right->eval(in);
  if (op == "~") {
    std::string left = to_str(a);
    const std::string right = to_str(b);
    check_text_size(left.size() + right.size(), line, "'~'");
    return Value::string(left + right);
  }
  return arithmetic(op, a, b, line);
}

Value LogicalExpr::eval_node(Interpreter& in) const {
  // Python returns the deciding operand, not a bool.
  Value a = left->eval(in);
  if (is_and ? !truthy(a) : truthy(a)) return a;
  return right->eval(in);
}

Value CompareExpr::eval_node(Interpreter& in) const {
  Value a = first->eval(in);
  for (const auto& [op, e] : rest) {
    Value b = e->eval(in);
    if (!compare(op, a, b, e->line)) return Value::boolean(false);
    a = std::move(b);
  }
  return Value::boolean(true);
}

Value CondExpr::eval_node(Interpreter& in) const {
  if (truthy(cond->eval(in))) return then->eval(in);
  if (otherwise) return otherwise->eval(in);
  return Value::undefined("the inline if-expression on line " + std::to_string(line) +
                          " evaluated to false and no else section was defined");
}

// ---- statements ----

void assign(Interpreter& in, const Target& target, Value value, int line) {
  if (!target.attr.empty()) {
    const Value ns = in.lookup(target.names[0]);
    if (!ns.is_namespace()) {
      fail_render(line, "cannot assign attribute '" + target.attr + "' on '" + target.names[0] +
                            "', which is a " + type_name(ns) + ", not a namespace()");
    }
    ns.as<NamespacePtr>()->attrs.set(target.attr, std::move(value));
    return;
  }
  if (!target.unpack) {
    in.frame->set(target.names[0], std::move(value));
    return;
  }
  ListPtr items = iterate(value, line);
  if (items->size() != target.names.size()) {
    fail_render(line, "cannot unpack " + std::to_string(items->size()) + " value(s) into " +
                          std::to_string(target.names.size()) + " names");
  }
  for (std::size_t i = 0; i < items->size(); ++i) in.frame->set(target.names[i], (*items)[i]);
}

Flow TextStmt::exec(Interpreter& in) const {
  in.write(text, line);
  return Flow::Normal;
}

Flow OutputStmt::exec(Interpreter& in) const {
  const Value v = expr->eval(in);
  in.write(to_str(v), line);
  return Flow::Normal;
}

Flow IfStmt::exec(Interpreter& in) const {
  for (const auto& [cond, body] : branches) {
    if (truthy(cond->eval(in))) return in.exec(body);
  }
  return in.exec(otherwise);
}

Flow ForStmt::exec(Interpreter& in) const {
  ListPtr items = iterate(iter->eval(in), iter->line);
  if (filter) {
    List kept;
    for (const auto& item : *items) {
      in.charge(1, line);
      ScopeGuard scope(in, in.frame);
      assign(in, target, item, line);
      if (truthy(filter->eval(in))) kept.push_back(item);
    }
    items = std::make_shared<const List>(std::move(kept));
  }
  if (items->empty()) return in.exec(otherwise);
  const std::size_t n = items->size();
  for (std::size_t i = 0; i < n; ++i) {
    in.charge(1, line);
    // A fresh scope per iteration: jinja2 does not carry {% set %} from one iteration to the next.
    ScopeGuard scope(in, in.frame);
    assign(in, target, (*items)[i], line);
    Dict loop;
    const auto index0 = static_cast<std::int64_t>(i);
    const auto length = static_cast<std::int64_t>(n);
    loop.entries.reserve(12);
    loop.entries.emplace_back("index0", Value::integer(index0));
    loop.entries.emplace_back("index", Value::integer(index0 + 1));
    loop.entries.emplace_back("revindex0", Value::integer(length - index0 - 1));
    loop.entries.emplace_back("revindex", Value::integer(length - index0));
    loop.entries.emplace_back("first", Value::boolean(i == 0));
    loop.entries.emplace_back("last", Value::boolean(i + 1 == n));
    loop.entries.emplace_back("length", Value::integer(length));
    loop.entries.emplace_back("depth", Value::integer(1));
    loop.entries.emplace_back("depth0", Value::integer(0));
    if (i > 0) loop.entries.emplace_back("previtem", (*items)[i - 1]);
    if (i + 1 < n) loop.entries.emplace_back("nextitem", (*items)[i + 1]);
    loop.entries.emplace_back(
        "cycle", Value::function(std::make_shared<const Function>(Function{
                     "cycle", [i](Interpreter&, CallArgs& args) {
                       if (args.positional.empty()) fail_render(args.line, "loop.cycle() needs at least one argument");
                       return args.positional[i % args.positional.size()];
                     }})));
    scope.frame().set("loop", Value::dict(std::move(loop)));
    const Flow flow = in.exec(body);
    if (flow == Flow::Break) break;
  }
  return Flow::Normal;
}

Flow SetStmt::exec(Interpreter& in) const {
  assign(in, target, value->eval(in), line);
  return Flow::Normal;
}

Flow SetBlockStmt::exec(Interpreter& in) const {
  Flow flow;
  std::string captured;
  {
    CaptureGuard capture(in);
    flow = in.exec(body);
    captured = capture.take();
  }
  Value value = Value::string(std::move(captured));
  if (filters) {
    Value saved = std::move(in.block_input);
    in.block_input = std::move(value);
    value = filters->eval(in);
    in.block_input = std::move(saved);
  }
  assign(in, target, std::move(value), line);
  return flow;
}

Flow MacroStmt::exec(Interpreter& in) const {
  const MacroStmt* self = this;
  in.frame->set(name, Value::function(std::make_shared<const Function>(Function{
                          name, [self](Interpreter& i, CallArgs& args) { return self->invoke(i, args); }})));
  return Flow::Normal;
}

Value MacroStmt::invoke(Interpreter& in, CallArgs& args) const {
  if (in.macro_depth >= kMaxMacroDepth) {
    fail_render(args.line, "macro '" + name + "' recursed deeper than " + std::to_string(kMaxMacroDepth));
  }
  if (args.positional.size() > params.size()) {
    fail_render(args.line, "macro '" + name + "' takes " + std::to_string(params.size()) +
                               " argument(s), " + std::to_string(args.positional.size()) + " given");
  }
  for (const auto& [key, value] : args.keyword) {
    const bool known = std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == key; });
    if (!known) fail_render(args.line, "macro '" + name + "' got an unexpected keyword argument '" + key + "'");
  }
  // Macros see the template's globals, not the caller's locals.
  ScopeGuard scope(in, &in.globals);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [param, def] = params[i];
    std::optional<Value> value;
    if (i < args.positional.size()) value = args.positional[i];
    for (const auto& [key, v] : args.keyword) {
      if (key == param) {
        if (value) fail_render(args.line, "macro '" + name + "' got multiple values for '" + param + "'");
        value = v;
      }
    }
    if (!value) {
      value = def ? def->eval(in)
                  : Value::undefined("parameter '" + param + "' of macro '" + name + "' was not provided");
    }
    scope.frame().set(param, std::move(*value));
  }
  CaptureGuard capture(in);
  ++in.macro_depth;
  try {
    in.exec(body);
  } catch (...) {
    --in.macro_depth;
    throw;
  }
  --in.macro_depth;
  return Value::string(capture.take());
}

Flow FilterBlockStmt::exec(Interpreter& in) const {
  Flow flow;
  std::string captured;
  {
    CaptureGuard capture(in);
    flow = in.exec(body);
    captured = capture.take();
  }
  Value saved = std::move(in.block_input);
  in.block_input = Value::string(std::move(captured));
  const Value result = filters->eval(in);
  in.block_input = std::move(saved);
  append_str(*in.out, result, false, 0);
  return flow;
}

Flow WithStmt::exec(Interpreter& in) const {
  ScopeGuard scope(in, in.frame);
  for (const auto& [name, e] : assignments) scope.frame().set(name, e->eval(in));
  return in.exec(body);
}

Flow PlainBlockStmt::exec(Interpreter& in) const { return in.exec(body); }

// ============================================================================================
// Formatting helpers: printf-style `%` (and |format), str.format.
// ============================================================================================

// snprintf into a string as long as the result (widths reach kMaxFormatWidth).
template <class T>
std::string c_format(const std::string& spec, T value) {
  const int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n <= 0) return "";
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Python's `fmt % args`.
std::string py_percent_format(const std::string& fmt, const List& args, int line) {
  std::string out;
  std::size_t next_arg = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail_render(line, "incomplete format in '%' formatting");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    if (fmt[i] == '(') fail_unsupported(line, "'%(name)s' mapping keys in '%' formatting");
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) flags += fmt[i++];
    // Width and precision are read digit by digit up to kMaxFormatWidth: std::stoi would throw
    // std::out_of_range past 2^31, and glibc's printf allocates a buffer as wide as asked.
    auto read_count = [&](const char* what) {
      int n = 0;
      while (i < fmt.size() && ascii_digit(fmt[i])) {
        n = n * 10 + (fmt[i++] - '0');
        if (n > kMaxFormatWidth) {
          fail_render(line, std::string("'%' format ") + what + " over the template limit of " +
                                std::to_string(kMaxFormatWidth));
        }
      }
      return n;
    };
    const std::size_t width_begin = i;
    const int w = read_count("width");
    const std::string width = fmt.substr(width_begin, i - width_begin);
    std::optional<int> precision;
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = read_count("precision");
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) fail_render(line, "incomplete format in '%' formatting");
    if (i < fmt.size() && fmt[i] == '*') fail_unsupported(line, "'*' width in '%' formatting");
    const char conv = fmt[i];
    if (next_arg >= args.size()) fail_render(line, "not enough arguments for format string");
    const Value& arg = args[next_arg++];
    check_text_size(out.size() + static_cast<std::size_t>(w), line, "'%' formatting");
    std::string spec = "%" + flags + width + (precision ? "." + std::to_string(*precision) : "");
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? to_str(arg) : to_repr(arg);
        if (precision) {
          const auto offsets = utf8_offsets(s);
          if (static_cast<std::size_t>(*precision) < offsets.size() - 1) s.resize(offsets[static_cast<std::size_t>(*precision)]);
        }
        const std::int64_t len = utf8_length(s);
        if (len < w) {
          const std::string pad(static_cast<std::size_t>(w - len), ' ');
          s = flags.find('-') != std::string::npos ? s + pad : pad + s;
        }
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'u': {
        if (arg.is_float() && !(std::abs(arg.as<double>()) < 9.2e18)) {
          fail_render(line, "%d format: cannot convert float " + to_repr(arg) + " to integer");
        }
        const std::int64_t v = arg.is_float() ? static_cast<std::int64_t>(arg.as<double>())
                                              : as_int(arg, "%d format", line);
        out += c_format(spec + "lld", static_cast<long long>(v));
        break;
      }
      case 'x':
      case 'X':
      case 'o': {
        const std::int64_t v = as_int(arg, std::string("%") + conv + " format", line);
        std::string sign = v < 0 ? "-" : "";
        out += sign + c_format(spec + "ll" + conv, static_cast<unsigned long long>(
                                                           v < 0 ? -static_cast<unsigned long long>(v)
                                                                 : static_cast<unsigned long long>(v)));
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        const double v = as_double(arg, std::string("%") + conv + " format", line);
        out += c_format(spec + conv, v);
        break;
      }
      case 'c':
        if (arg.is_string()) {
          out += arg.str();
        } else {
          append_utf8(out, static_cast<char32_t>(as_int(arg, "%c format", line)));
        }
        break;
      default: fail_render(line, std::string("unsupported format character '") + conv + "'");
    }
  }
  if (next_arg < args.size()) fail_render(line, "not all arguments converted during string formatting");
  return out;
}

std::string py_percent_format(const std::string& fmt, const Value& args, int line) {
  if (args.is_list() && args.items().is_tuple) return py_percent_format(fmt, args.items(), line);
  if (args.is_dict()) fail_unsupported(line, "mapping on the right of '%' formatting");
  return py_percent_format(fmt, List{args}, line);
}

// Python's str.format with "{}", "{0}", "{name}" and !r/!s; format specs are not supported.
std::string py_str_format(const std::string& fmt, const CallArgs& args, int line) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      fail_render(line, "Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = fmt.find('}', i);
    if (close == std::string::npos) fail_render(line, "Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const std::size_t colon = field.find(':'); colon != std::string::npos) {
      if (colon + 1 < field.size()) fail_unsupported(line, "format spec '" + field.substr(colon) + "' in str.format()");
      field.resize(colon);
    }
    if (const std::size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find_first_of(".[") != std::string::npos) {
      fail_unsupported(line, "attribute/index lookups in str.format() fields");
    }
    const Value* arg = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ascii_digit)) {
      const std::size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) fail_render(line, "str.format(): Replacement index " + std::to_string(index) + " out of range");
      arg = &args.positional[index];
    } else {
      for (const auto& [k, v] : args.keyword) {
        if (k == field) arg = &v;
      }
      if (arg == nullptr) fail_render(line, "str.format(): missing keyword argument '" + field + "'");
    }
    out += conversion == 'r' ? to_repr(*arg) : to_str(*arg);
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
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

// ============================================================================================
// Filters.
// ============================================================================================

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

Value dict_items(const Dict& d) {
  List items;
  items.reserve(d.entries.size());
  for (const auto& [k, v] : d.entries) items.push_back(Value::tuple(List{Value::string(k), v}));
  return Value::list(std::move(items));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  bind(args, {}, "items");
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) fail_render(args.line, "|items: can only get item pairs from a mapping, got '" + type_name(v) + "'");
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
  for (std::size_t i = 0; i < items->size(); ++i) keyed.emplace_back(sort_key((*items)[i], a[2], case_sensitive, args.line), i);
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
    indention = a[0]->is_string()
                    ? a[0]->str()
                    : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(as_int(*a[0], "indent width", args.line), 0, 1024)), ' ');
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

FilterFn find_filter(std::string_view name) {
  const auto& table = filter_table();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

// ============================================================================================
// Tests (`x is name`).
// ============================================================================================

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

// Python str.islower()/isupper(): at least one cased character and none of the other case.
bool ascii_case_test(const std::string& s, bool want_lower) {
  bool cased = false;
  for (const char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!want_lower) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

#define OPCHAIN_JINJA_SIMPLE_TEST(fname, label, expr)          \
  bool fname(Interpreter&, const Value& v, CallArgs& args) { \
    no_test_args(args, label);                                \
    return (expr);                                            \
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

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"!=", t_ne},           {"<", t_lt},           {"<=", t_le},
      {"==", t_eq},           {">", t_gt},           {">=", t_ge},
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined},
      {"divisibleby", t_divisibleby}, {"eq", t_eq},  {"equalto", t_eq},
      {"escaped", t_escaped}, {"even", t_even},      {"false", t_false},
      {"filter", t_filter},   {"float", t_float},    {"ge", t_ge},
      {"greaterthan", t_gt},  {"gt", t_gt},          {"in", t_in},
      {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le},
      {"lessthan", t_lt},     {"lower", t_lower},    {"lt", t_lt},
      {"mapping", t_mapping}, {"ne", t_ne},          {"none", t_none},
      {"number", t_number},   {"odd", t_odd},        {"sameas", t_sameas},
      {"sequence", t_sequence}, {"string", t_string}, {"test", t_test},
      {"true", t_true},       {"undefined", t_undefined}, {"upper", t_upper},
  };
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

// ============================================================================================
// Methods on str and dict, and the loop object's cycle().
// ============================================================================================

const std::set<std::string, std::less<>>& string_methods() {
  static const std::set<std::string, std::less<>> names = {
      "capitalize", "count",   "endswith", "find",    "format",     "isalnum", "isalpha",
      "isdigit",    "islower", "isspace",  "isupper", "join",       "lower",   "lstrip",
      "replace",    "rfind",   "rsplit",   "rstrip",  "split",      "splitlines",
      "startswith", "strip",   "title",    "upper"};
  return names;
}

const std::set<std::string, std::less<>>& dict_methods() {
  static const std::set<std::string, std::less<>> names = {"get", "items", "keys", "values"};
  return names;
}

bool is_known_method(std::string_view name) {
  return string_methods().count(name) != 0 || dict_methods().count(name) != 0 || name == "cycle";
}

// Code point range [start, end) of s as a byte substring (Python s[start:end]).
std::string cp_slice(const std::string& s, const std::optional<Value>& start, const std::optional<Value>& end, int line) {
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
    const auto window = slice_positions(offsets.size() - 1, a[1] ? *a[1] : Value::none(),
                                        a[2] ? *a[2] : Value::none(), Value::none(), line);
    const std::size_t base_cp = window.empty() ? 0 : window.front();
    const std::string hay = window.empty() ? std::string()
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
    const ListPtr items = iterate(require(a[0], what, "iterable", line), line);  // owned here: a range-for would free a fresh list
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

// ============================================================================================
// Global functions.
// ============================================================================================

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

template <class Json>
std::string render_program(const Template::Program& program, const Json& context) {
  if (!context.is_object() && !context.is_null()) {
    throw InvalidArgumentError("template context must be a JSON object, got " + std::string(context.type_name()));
  }
  std::string out;
  Interpreter in(&out);
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) {
      in.globals.vars.emplace_back(it.key(), from_json(it.value(), 0));
    }
  }
  in.exec(program.body);
  return out;
}

}  // namespace

// ============================================================================================
// Public API.
// ============================================================================================

Template::Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

Template Template::parse(std::string source, Options options) {
  // Like jinja2: \r\n and \r become \n, and one trailing newline is dropped by default.
  std::string src;
  src.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!options.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
  Lexer lexer(src, options);
  Parser parser(lexer.run());
  auto program = std::make_shared<Program>();
  program->body = parser.parse_template();
  return Template(std::move(program));
}

// Rendering fails with InvalidArgumentError or FormatError only (see jinja.h): anything else that
// escaped would reach the CLI as "internal error" and the server as a 500.
template <class Json>
std::string render_guarded(const Template::Program& program, const Json& context) {
  try {
    return render_program(program, context);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw InvalidArgumentError("rendering the template needs more memory than is available");
  } catch (const std::exception& e) {
    throw InvalidArgumentError(std::string("rendering the template failed: ") + e.what());
  }
}

std::string Template::render(const nlohmann::json& context) const { return render_guarded(*program_, context); }

std::string Template::render(const nlohmann::ordered_json& context) const {
  return render_guarded(*program_, context);
}

}  // namespace opchain::jinja
