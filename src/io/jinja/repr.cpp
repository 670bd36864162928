#include "io/jinja/repr.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/jinja/limits.h"

namespace opchain::jinja::detail {

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
      out =
          digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." + digits.substr(static_cast<std::size_t>(exp) + 1);
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

namespace {

void append_repr(std::string& out, const Value& v, int depth) { append_str(out, v, true, depth); }

}  // namespace

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
    case 1:
      out += "None";
      return;
    case 2:
      out += v.as<bool>() ? "True" : "False";
      return;
    case 3:
      out += std::to_string(v.as<std::int64_t>());
      return;
    case 4:
      out += py_float_repr(v.as<double>());
      return;
    case 5:
      out += repr ? py_str_repr(v.str()) : v.str();
      return;
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
    default:
      out += "<function " + v.as<FunctionPtr>()->name + ">";
      return;
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

}  // namespace opchain::jinja::detail
