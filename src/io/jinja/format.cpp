#include "io/jinja/format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/limits.h"
#include "io/jinja/python_string.h"
#include "io/jinja/repr.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

namespace {

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

}  // namespace

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
          if (static_cast<std::size_t>(*precision) < offsets.size() - 1)
            s.resize(offsets[static_cast<std::size_t>(*precision)]);
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
        const std::int64_t v =
            arg.is_float() ? static_cast<std::int64_t>(arg.as<double>()) : as_int(arg, "%d format", line);
        out += c_format(spec + "lld", static_cast<long long>(v));
        break;
      }
      case 'x':
      case 'X':
      case 'o': {
        const std::int64_t v = as_int(arg, std::string("%") + conv + " format", line);
        std::string sign = v < 0 ? "-" : "";
        out += sign + c_format(spec + "ll" + conv,
                               static_cast<unsigned long long>(v < 0 ? -static_cast<unsigned long long>(v)
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
      default:
        fail_render(line, std::string("unsupported format character '") + conv + "'");
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
      if (index >= args.positional.size())
        fail_render(line, "str.format(): Replacement index " + std::to_string(index) + " out of range");
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

}  // namespace opchain::jinja::detail
