#include "io/jinja/python_string.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/jinja/errors.h"
#include "io/jinja/limits.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

// Python's str.isspace() for the ASCII range plus the separators str.split() honours.
bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= '\x1c' && c <= '\x1f');
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
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
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
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                                  bool from_right, int line) {
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
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, std::int64_t count,
                       int line) {
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

}  // namespace opchain::jinja::detail
