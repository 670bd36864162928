#pragma once
// Streaming detokenisation. A byte-level BPE token can end in the middle of a UTF-8 character (an
// emoji is often 2-4 tokens), so each push returns only the characters completed so far and holds
// the trailing partial sequence back. Concatenating every push() and the final flush() gives exactly
// the one-shot decode of all the tokens' bytes with invalid bytes replaced by U+FFFD, the way HF
// decode does (Rust from_utf8_lossy / Python errors='replace': one U+FFFD per maximal invalid
// subpart).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace opchain {

// One-shot lossy decode: returns bytes as valid UTF-8, each maximal invalid subpart (including a
// truncated sequence at the end) replaced by U+FFFD.
std::string utf8_replace_invalid(std::string_view bytes);

class IncrementalDetokenizer {
 public:
  // token_bytes: the raw bytes one token decodes to (possibly partial UTF-8); any context-dependent
  // decoder rule (e.g. stripping a SentencePiece leading space on the first token) is the caller's.
  // is_special: whether the id is a special/control token, dropped when skip_special_tokens.
  // Throws InvalidArgumentError if either function is empty.
  IncrementalDetokenizer(std::function<std::string(int32_t)> token_bytes, std::function<bool(int32_t)> is_special,
                         bool skip_special_tokens);

  // Returns the newly completed text; an incomplete trailing UTF-8 sequence is held back. A skipped
  // special token leaves held bytes pending, as a one-shot decode would join the bytes around it.
  std::string push(int32_t id);

  // End of stream: returns the held bytes, an incomplete sequence replaced by U+FFFD.
  std::string flush();

  // Bytes currently held back (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::function<std::string(int32_t)> token_bytes_;
  std::function<bool(int32_t)> is_special_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace opchain
