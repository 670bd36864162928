#pragma once
// UTF-8, in one place for the tokenizer and the Jinja engine.
//
// Two readings of ill-formed bytes, for two needs:
//   * strict (is_valid_utf8, append_utf8_lossy): Unicode's well-formedness (Table 3-7), replacing
//     each maximal ill-formed subpart with U+FFFD as Rust's String::from_utf8_lossy and Python's
//     errors='replace' do, so decoded text matches Hugging Face byte for byte;
//   * lenient (utf8_char_len and what builds on it): what the Jinja engine indexes by.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opchain {

// Length of the well-formed sequence starting at s[i] (1..4), or 0 if ill-formed; on failure
// `subpart` is the length of the maximal prefix that could still have begun a valid sequence.
size_t utf8_sequence(const unsigned char* s, size_t n, size_t i, size_t& subpart) noexcept;
// Whether b can begin a well-formed sequence: ASCII or C2..F4 (C0, C1 and F5..FF never can, nor
// can a continuation byte).
constexpr bool utf8_lead_byte(unsigned char b) noexcept { return b < 0x80 || (b >= 0xC2 && b <= 0xF4); }

bool is_valid_utf8(std::string_view s) noexcept;
// Appends `bytes` with each ill-formed sequence replaced by U+FFFD, one per maximal subpart
// (the rule Rust's String::from_utf8_lossy follows, so decode() matches Hugging Face).
void append_utf8_lossy(std::string& out, std::string_view bytes);
// Appends the encoding of one code point.
void append_utf8(std::string& out, char32_t cp);

// Decodes the code point starting at s[i] of valid UTF-8; sets len to its byte length.
inline char32_t decode_utf8(const unsigned char* s, size_t i, size_t& len) noexcept {
  const unsigned char b = s[i];
  if (b < 0x80) {
    len = 1;
    return b;
  }
  if (b < 0xE0) {
    len = 2;
    return (char32_t(b & 0x1F) << 6) | (s[i + 1] & 0x3F);
  }
  if (b < 0xF0) {
    len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
  }
  len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(s[i + 1] & 0x3F) << 12) | (char32_t(s[i + 2] & 0x3F) << 6) |
         (s[i + 3] & 0x3F);
}

// ---------------------------------------------------------------------------------------------
// Lenient code-point walk (the Jinja engine's). Python strings index by code point, so slicing,
// len() and iteration must too. Malformed bytes count as one code point each rather than
// throwing: rendering should not fail on text that merely looks odd.
// ---------------------------------------------------------------------------------------------

// Byte length of the code point starting at s[i]; 1 for a malformed byte.
std::size_t utf8_char_len(const std::string& s, std::size_t i);
// Byte offsets of each code point start, plus s.size() at the end.
std::vector<std::size_t> utf8_offsets(const std::string& s);
// The code points of s, one string each.
std::vector<std::string> utf8_chars(const std::string& s);
// Python len(s): the number of code points.
std::int64_t utf8_length(const std::string& s);
// Decodes the n-byte code point at s[i] (n from utf8_char_len); malformed bytes decode to U+FFFD.
char32_t utf8_decode(const std::string& s, std::size_t i, std::size_t n);

}  // namespace opchain
