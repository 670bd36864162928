#include "engine/detokenizer.h"

#include <utility>

#include "core/error.h"

namespace opchain {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the sequence a lead byte announces; 0 for a byte that can never start one
// (continuation bytes, the overlong leads C0/C1, and F5..FF beyond U+10FFFF).
size_t sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Valid range of the byte after a lead (Unicode Table 3-7): narrower after E0/ED/F0/F4 so that
// overlongs, surrogates and code points past U+10FFFF are rejected at the earliest byte, which is
// what makes "maximal subpart" replacement match Python and Rust.
bool valid_second(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// Appends the decodable part of bytes to out and returns how many bytes it consumed. Unless final,
// a trailing sequence that is valid so far but incomplete is left unconsumed (a later token may
// complete it); when final, it becomes one U+FFFD.
size_t decode_lossy(std::string_view bytes, bool final, std::string& out) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    const size_t len = sequence_length(lead);
    if (len == 1) {
      out.push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    if (len == 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    // Count how many bytes after the lead continue the sequence validly.
    size_t good = 1;
    while (good < len && i + good < n) {
      const auto b = static_cast<unsigned char>(bytes[i + good]);
      const bool ok = good == 1 ? valid_second(lead, b) : (b >= 0x80 && b <= 0xBF);
      if (!ok) break;
      ++good;
    }
    if (good == len) {
      out.append(bytes.substr(i, len));
    } else if (i + good == n && !final) {
      return i;  // valid prefix cut off by the end of the data: wait for more
    } else {
      out.append(kReplacement);  // the maximal valid prefix becomes one U+FFFD; resume at the bad byte
    }
    i += good;
  }
  return n;
}

}  // namespace

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  decode_lossy(bytes, /*final=*/true, out);
  return out;
}

IncrementalDetokenizer::IncrementalDetokenizer(std::function<std::string(int32_t)> token_bytes,
                                               std::function<bool(int32_t)> is_special, bool skip_special_tokens)
    : token_bytes_(std::move(token_bytes)), is_special_(std::move(is_special)), skip_special_(skip_special_tokens) {
  if (!token_bytes_) throw InvalidArgumentError("IncrementalDetokenizer: token_bytes function is empty");
  if (!is_special_) throw InvalidArgumentError("IncrementalDetokenizer: is_special function is empty");
}

std::string IncrementalDetokenizer::push(int32_t id) {
  if (skip_special_ && is_special_(id)) return {};
  pending_ += token_bytes_(id);
  std::string out;
  const size_t used = decode_lossy(pending_, /*final=*/false, out);
  pending_.erase(0, used);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = utf8_replace_invalid(pending_);
  pending_.clear();
  return out;
}

}  // namespace opchain
