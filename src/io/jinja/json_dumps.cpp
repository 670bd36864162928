#include "io/jinja/json_dumps.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/jinja/errors.h"
#include "io/jinja/limits.h"
#include "io/jinja/repr.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

namespace {

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
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
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

}  // namespace

void write_json(std::string& out, const Value& v, const JsonStyle& style, int depth, int line) {
  if (depth > kMaxNesting) fail_render(line, "tojson: value nested too deeply");
  auto newline_indent = [&](int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *style.indent;
  };
  switch (v.data.index()) {
    case 1:
      out += "null";
      return;
    case 2:
      out += v.as<bool>() ? "true" : "false";
      return;
    case 3:
      out += std::to_string(v.as<std::int64_t>());
      return;
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
    case 5:
      json_escape(out, v.str(), style.ensure_ascii);
      return;
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

}  // namespace opchain::jinja::detail
