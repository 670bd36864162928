#include "engine/detokenizer.h"

#include <utility>

#include "core/error.h"
#include "io/utf8.h"

namespace opchain {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends the decodable part of bytes to out and returns how many bytes it consumed. Unless final,
// a trailing sequence that is valid so far but incomplete is left unconsumed (a later token may
// complete it); when final, it becomes one U+FFFD. Ill-formed bytes follow utf8_sequence's maximal
// subparts (io/utf8.h), which is what makes the replacement match Python and Rust.
size_t decode_lossy(std::string_view bytes, bool final, std::string& out) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    size_t subpart;
    const size_t len = utf8_sequence(s, n, i, subpart);
    if (len) {
      out.append(bytes.substr(i, len));
      i += len;
      continue;
    }
    if (!final && i + subpart == n && utf8_lead_byte(s[i])) return i;  // cut off by the end of the data: wait for more
    out.append(kReplacement);  // the maximal valid prefix becomes one U+FFFD; resume at the bad byte
    i += subpart;
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
