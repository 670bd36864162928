#pragma once
// Byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json (Qwen2/Qwen3, Llama-3,
// GPT-2 style). Encoding reproduces the `tokenizers` library id for id; decoding reproduces its
// `decode`, including U+FFFD for byte sequences that are not valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace opchain {

struct ModelDirectory;

class Tokenizer {
 public:
  // Both throw FormatError naming the file and the offending field (e.g. "model.vocab") on
  // malformed or unsupported input.
  static Tokenizer from_file(const std::string& tokenizer_json_path);
  static Tokenizer from_json_text(const std::string& text, const std::string& origin_for_errors);
  // The directory's tokenizer.json (Note [Model directory]); FormatError "no tokenizer.json in <dir>"
  // when it has none.
  static Tokenizer from_model_directory(const ModelDirectory& dir);

  // Copies share the loaded tables (immutable) and the word cache (internally synchronised), so
  // copying is cheap and every method may be called from several threads at once.
  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
  Tokenizer(Tokenizer&&) noexcept = default;
  Tokenizer& operator=(Tokenizer&&) noexcept = default;
  ~Tokenizer();

  // Text to ids, like Hugging Face `encode(text, add_special_tokens=False)`: added tokens found in
  // the raw text win (leftmost, then longest), the rest is normalised, split by the
  // pre-tokenizer and merged by BPE. The post-processor (e.g. Llama-3's BOS) is not applied; chat
  // templates spell those tokens out. Ill-formed UTF-8 is first replaced by U+FFFD.
  std::vector<int32_t> encode(std::string_view text) const;
  // As above; with match_special_tokens=false, added tokens marked special are not recognised
  // and are encoded as ordinary text (Hugging Face's `split_special_tokens=True`), so user text
  // cannot inject control tokens. Non-special added tokens (e.g. <think>) still match.
  std::vector<int32_t> encode(std::string_view text, bool match_special_tokens) const;

  // Ids to text. Ids with no token (negative, in a gap, or >= vocab_size()) are skipped, as
  // Hugging Face does; byte sequences that are not valid UTF-8 become U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // The token string as stored in tokenizer.json (byte-level alphabet, e.g. "Ġhello"), or an
  // added token's content. Throws InvalidArgumentError for an id with no token.
  std::string id_to_token(int32_t id) const;
  // Added tokens are looked up first, then the model vocabulary (raw, byte-level spelling).
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // True for added tokens with "special": true.
  bool is_special(int32_t id) const;
  // Max id + 1 over the vocabulary and the added tokens.
  size_t vocab_size() const;
  // The bytes one token contributes to decode() (before UTF-8 repair): possibly a partial UTF-8
  // sequence, for streaming detokenisation. Empty for ids that decode() would skip.
  std::string token_bytes(int32_t id) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace opchain
