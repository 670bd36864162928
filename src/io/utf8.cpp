#include "io/utf8.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opchain {

// ---------------------------------------------------------------------------------------------
// Strict
// ---------------------------------------------------------------------------------------------

size_t utf8_sequence(const unsigned char* s, size_t n, size_t i, size_t& subpart) noexcept {
  const unsigned char b = s[i];
  subpart = 1;
  if (b < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte (Unicode Table 3-7)
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= n) return 0;
    const unsigned char c = s[i + k];
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return 0;
    subpart = k + 1;
  }
  return need + 1;
}

bool is_valid_utf8(std::string_view sv) noexcept {
  const auto* s = reinterpret_cast<const unsigned char*>(sv.data());
  const size_t n = sv.size();
  size_t i = 0;
  while (i < n) {
    // Skip ASCII eight bytes at a time; most prompts are mostly ASCII.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t subpart;
    const size_t len = utf8_sequence(s, n, i, subpart);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void append_utf8_lossy(std::string& out, std::string_view sv) {
  const auto* s = reinterpret_cast<const unsigned char*>(sv.data());
  const size_t n = sv.size();
  out.reserve(out.size() + n);
  size_t i = 0;
  while (i < n) {
    size_t subpart;
    const size_t len = utf8_sequence(s, n, i, subpart);
    if (len) {
      out.append(sv.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += subpart;
    }
  }
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ---------------------------------------------------------------------------------------------
// Lenient
// ---------------------------------------------------------------------------------------------

std::size_t utf8_char_len(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 1;
  if (c >= 0xF0 && c < 0xF8) {
    n = 4;
  } else if (c >= 0xE0) {
    n = c < 0xF0 ? 3 : 1;
  } else if (c >= 0xC0) {
    n = 2;
  }
  if (i + n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

// Byte offsets of each code point start, plus s.size() at the end.
std::vector<std::size_t> utf8_offsets(const std::string& s) {
  std::vector<std::size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size(); i += utf8_char_len(s, i)) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> chars;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_char_len(s, i);
    chars.push_back(s.substr(i, n));
    i += n;
  }
  return chars;
}

std::int64_t utf8_length(const std::string& s) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < s.size(); i += utf8_char_len(s, i)) ++n;
  return n;
}

// Decodes one code point; malformed bytes decode to U+FFFD.
char32_t utf8_decode(const std::string& s, std::size_t i, std::size_t n) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (n == 1) return c < 0x80 ? c : 0xFFFD;
  char32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

}  // namespace opchain
