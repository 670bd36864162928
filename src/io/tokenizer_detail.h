#pragma once
// Internals shared by tokenizer.cpp, tokenizer_pretok.cpp, tokenizer_bpe.cpp and the tests.
// Not part of the public API: tokenizer.h is what the rest of opchain includes.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/utf8.h"

namespace opchain::tokenizer_detail {

// Non-owning callable reference: the pre-tokenizer calls back once per piece, and
// std::function would cost an allocation or an indirect copy on that hot path.
template <class Sig>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)
  noexcept  // NOLINT(google-explicit-constructor): used like a lambda parameter
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}

  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// Byte offsets [begin, end) of one regex match inside the searched text.
struct Span {
  size_t begin;
  size_t end;
  bool operator==(const Span&) const = default;
};

// A compiled Split pattern. Implementations are immutable after construction and safe to
// share between threads.
class SplitPattern {
 public:
  virtual ~SplitPattern() = default;
  // Calls on_match for every non-empty, non-overlapping match in `text` (valid UTF-8), left to
  // right, with the same semantics as Oniguruma's find_iter that Hugging Face tokenizers uses.
  virtual void for_each_match(std::string_view text, FunctionRef<void(Span)> on_match) const = 0;
  // Which engine runs the pattern ("builtin:qwen2", "icu", "literal"...); tests use it to check
  // that the fast path was picked.
  virtual std::string engine() const = 0;
};

// GPT-2's split regex, used by ByteLevel when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// The Qwen2/Qwen2.5/Qwen3 split regex.
inline constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The Llama-3 split regex: Qwen2's with digits grouped in threes.
inline constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Compiles an Oniguruma-syntax pattern: a hand-written matcher when it is one of the known
// patterns above, ICU otherwise. Throws FormatError whose message starts with `context`.
std::unique_ptr<SplitPattern> compile_regex(std::string_view pattern, const std::string& context);
// Always ICU (with \s and \S rewritten to Unicode White_Space); tests compare it to the fast path.
std::unique_ptr<SplitPattern> compile_regex_icu(std::string_view pattern, const std::string& context);
// Split on a literal string.
std::unique_ptr<SplitPattern> compile_literal(std::string literal);

// ---------------------------------------------------------------------------------------------
// BPE core
// ---------------------------------------------------------------------------------------------

// Merge table: open addressing keyed by the id pair. BPE does several lookups per merge, so this
// is the hottest data structure; std::unordered_map's node chasing costs about twice as much.
class MergeTable {
 public:
  static constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

  MergeTable() { reserve(0); }

  void reserve(size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, kNone});
    mask_ = cap - 1;
    shift_ = 64 - std::countr_zero(cap);
  }

  // Later duplicates overwrite earlier ones, as the HashMap Hugging Face builds does.
  void insert(int32_t a, int32_t b, uint32_t rank, int32_t merged) {
    const uint64_t key = pack(a, b);
    size_t i = slot_of(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    slots_[i] = Slot{key, (uint64_t{rank} << 32) | static_cast<uint32_t>(merged)};
  }

  // (rank << 32 | merged id), or kNone. Packing makes "lowest rank" a plain integer minimum.
  uint64_t find(int32_t a, int32_t b) const noexcept {
    const uint64_t key = pack(a, b);
    size_t i = slot_of(key);
    for (;;) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmpty) return kNone;
      i = (i + 1) & mask_;
    }
  }

 private:
  static constexpr uint64_t kEmpty = std::numeric_limits<uint64_t>::max();
  struct Slot {
    uint64_t key;
    uint64_t value;
  };
  static uint64_t pack(int32_t a, int32_t b) noexcept {
    return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
  }
  size_t slot_of(uint64_t key) const noexcept { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_); }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
};

// Words up to this many symbols use merge_small; measured crossover with merge_large.
inline constexpr size_t kSmallWord = 80;

// Both apply the merges in the order `tokenizers` does: repeatedly the lowest-ranked adjacent
// pair, leftmost first among equal ranks. They must agree exactly; tests check that.
// merge_small rewrites sym[0..m) in place (m <= kSmallWord) and returns the new length.
size_t merge_small(const MergeTable& merges, int32_t* sym, size_t m) noexcept;
void merge_large(const MergeTable& merges, std::vector<int32_t>& sym);

// UTF-8 lives in io/utf8.h; the td:: spellings stay for the tokenizer and its tests.
using opchain::append_utf8;
using opchain::append_utf8_lossy;
using opchain::decode_utf8;
using opchain::is_valid_utf8;

// GPT-2 byte-level alphabet: every byte maps to one printable code point.
char32_t byte_to_char(uint8_t b) noexcept;
// Inverse of byte_to_char; -1 when `c` is not in the alphabet.
int char_to_byte(char32_t c) noexcept;

// Unicode properties used by the pre-tokenizer and added-token options.
bool is_white_space(char32_t c) noexcept;  // Unicode White_Space, i.e. Rust/Oniguruma \s
bool is_word_char(char32_t c) noexcept;    // Rust regex \w: Alphabetic, M, Nd, Pc, Join_Control

}  // namespace opchain::tokenizer_detail
