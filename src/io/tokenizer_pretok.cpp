// Pre-tokenizer patterns and Unicode helpers for the byte-level BPE tokenizer.
//
// Hugging Face tokenizers runs its Split regexes with Oniguruma. The three patterns real
// byte-level models ship (GPT-2, Qwen2, Llama-3) are matched here by hand: they are simple
// alternations, and a direct scan is several times faster than a backtracking engine. Any other
// pattern goes to ICU, after rewriting \s and \S: ICU's \s is [\t\n\f\r\p{Z}], which lacks
// U+000B and U+0085, while Oniguruma's is Unicode White_Space, which has both.
#include <unicode/regex.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>

#include <array>
#include <memory>
#include <string>

#include "core/error.h"
#include "io/tokenizer_detail.h"

namespace opchain::tokenizer_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Character classes
// ---------------------------------------------------------------------------------------------

enum : uint8_t {
  kLetter = 1,   // \p{L}
  kNumber = 2,   // \p{N}
  kSpace = 4,    // \s (White_Space)
  kNewline = 8,  // \r or \n
};

uint8_t compute_class(char32_t c) noexcept {
  uint8_t k = 0;
  const uint32_t mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  if (mask & U_GC_L_MASK) k |= kLetter;
  if (mask & U_GC_N_MASK) k |= kNumber;
  if (u_isUWhiteSpace(static_cast<UChar32>(c))) k |= kSpace;
  if (c == '\r' || c == '\n') k |= kNewline;
  return k;
}

// The BMP covers nearly all text; a flat table avoids an ICU trie walk per character.
const std::array<uint8_t, 0x10000>& bmp_classes() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<uint8_t, 0x10000>>();
    for (char32_t c = 0; c < 0x10000; ++c) (*t)[c] = compute_class(c);
    return t;
  }();
  return *table;
}

inline uint8_t char_class(char32_t c) noexcept {
  if (c < 0x10000) return bmp_classes()[c];
  return compute_class(c);
}

// ---------------------------------------------------------------------------------------------
// Hand-written matchers for the known patterns
// ---------------------------------------------------------------------------------------------

enum class Dialect { kGpt2, kQwen2, kLlama3 };

// Scans `text` the way Oniguruma's leftmost-first alternation would for one of the known
// patterns. Every character is covered by some alternative, so matches tile the text.
class BuiltinPattern final : public SplitPattern {
 public:
  explicit BuiltinPattern(Dialect d) : dialect_(d), bmp_(bmp_classes().data()) {}

  void for_each_match(std::string_view text, FunctionRef<void(Span)> on_match) const override {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    while (i < n) {
      const size_t end = match_at(s, n, i);
      on_match(Span{i, end});
      i = end;
    }
  }

  std::string engine() const override {
    switch (dialect_) {
      case Dialect::kGpt2:
        return "builtin:gpt2";
      case Dialect::kQwen2:
        return "builtin:qwen2";
      case Dialect::kLlama3:
        return "builtin:llama3";
    }
    return "builtin";
  }

 private:
  struct Char {
    char32_t cp;
    size_t len;
    uint8_t cls;
  };

  Char at(const unsigned char* s, size_t i) const noexcept {
    Char c{};
    if (s[i] < 0x80) {
      c.cp = s[i];
      c.len = 1;
    } else {
      c.cp = decode_utf8(s, i, c.len);
    }
    c.cls = c.cp < 0x10000 ? bmp_[c.cp] : compute_class(c.cp);
    return c;
  }

  static bool is_other(uint8_t cls) noexcept { return (cls & (kLetter | kNumber | kSpace)) == 0; }

  // End of the run of characters starting at i whose class satisfies `pred`.
  template <class Pred>
  size_t run_end(const unsigned char* s, size_t n, size_t i, Pred pred) const noexcept {
    while (i < n) {
      const Char c = at(s, i);
      if (!pred(c.cls)) break;
      i += c.len;
    }
    return i;
  }

  // Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0. The Qwen2 and Llama-3
  // patterns wrap these in (?i:...), and Oniguruma's case folding also maps U+017F (long s) to s.
  size_t contraction(const unsigned char* s, size_t n, size_t i) const noexcept {
    if (s[i] != '\'' || i + 1 >= n) return 0;
    const bool fold = dialect_ != Dialect::kGpt2;
    auto lower = [fold](unsigned char b) -> unsigned char {
      return (fold && b >= 'A' && b <= 'Z') ? static_cast<unsigned char>(b + 32) : b;
    };
    const unsigned char c1 = lower(s[i + 1]);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (fold && s[i + 1] == 0xC5 && i + 2 < n && s[i + 2] == 0xBF) return 3;  // U+017F
    if (i + 2 < n) {
      const unsigned char c2 = lower(s[i + 2]);
      if ((c1 == 'r' || c1 == 'v') && c2 == 'e') return 3;
      if (c1 == 'l' && c2 == 'l') return 3;
    }
    return 0;
  }

  size_t match_at(const unsigned char* s, size_t n, size_t i) const noexcept {
    if (const size_t len = contraction(s, n, i)) return i + len;
    const Char c0 = at(s, i);
    const bool has_next = i + c0.len < n;
    const Char c1 = has_next ? at(s, i + c0.len) : Char{0, 0, 0};
    auto is_letter = [](uint8_t k) { return (k & kLetter) != 0; };
    auto is_number = [](uint8_t k) { return (k & kNumber) != 0; };

    if (dialect_ == Dialect::kGpt2) {
      // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
      const bool space_prefix = c0.cp == ' ' && has_next;
      if (space_prefix && is_letter(c1.cls)) return run_end(s, n, i + 1, is_letter);
      if (is_letter(c0.cls)) return run_end(s, n, i, is_letter);
      if (space_prefix && is_number(c1.cls)) return run_end(s, n, i + 1, is_number);
      if (is_number(c0.cls)) return run_end(s, n, i, is_number);
      if (space_prefix && is_other(c1.cls)) return run_end(s, n, i + 1, is_other);
      if (is_other(c0.cls)) return run_end(s, n, i, is_other);
      return whitespace(s, n, i, /*newline_alternative=*/false);
    }

    // `[^\r\n\p{L}\p{N}]?\p{L}+`
    if ((c0.cls & (kLetter | kNumber | kNewline)) == 0 && has_next && is_letter(c1.cls)) {
      return run_end(s, n, i + c0.len, is_letter);
    }
    if (is_letter(c0.cls)) return run_end(s, n, i, is_letter);
    // `\p{N}` (Qwen2) or `\p{N}{1,3}` (Llama-3)
    if (is_number(c0.cls)) {
      size_t end = i + c0.len;
      if (dialect_ == Dialect::kLlama3) {
        for (int k = 1; k < 3 && end < n; ++k) {
          const Char c = at(s, end);
          if (!is_number(c.cls)) break;
          end += c.len;
        }
      }
      return end;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    size_t start = std::string_view::npos;
    if (c0.cp == ' ' && has_next && is_other(c1.cls)) {
      start = i + 1;
    } else if (is_other(c0.cls)) {
      start = i;
    }
    if (start != std::string_view::npos) {
      size_t end = run_end(s, n, start, is_other);
      while (end < n && (s[end] == '\r' || s[end] == '\n')) ++end;
      return end;
    }
    return whitespace(s, n, i, /*newline_alternative=*/true);
  }

  // The whitespace alternatives, at a position where the character is White_Space:
  // `\s*[\r\n]+` (Qwen2/Llama-3 only), then `\s+(?!\S)`, then `\s+`.
  size_t whitespace(const unsigned char* s, size_t n, size_t i, bool newline_alternative) const noexcept {
    size_t end = i;
    size_t last_start = i;
    size_t last_newline = std::string_view::npos;
    while (end < n) {
      const Char c = at(s, end);
      if (!(c.cls & kSpace)) break;
      if (c.cls & kNewline) last_newline = end;
      last_start = end;
      end += c.len;
    }
    // `\s*` backtracks until `[\r\n]+` can start, i.e. to the last newline of the run; the
    // newline class then matches just that one character since nothing after it is \r or \n.
    if (newline_alternative && last_newline != std::string_view::npos) return last_newline + 1;
    // `\s+(?!\S)`: at the end of the text the whole run matches; otherwise backtrack one
    // character so the lookahead sees whitespace, which needs a run of two or more.
    if (end == n) return end;
    if (last_start > i) return last_start;
    return end;  // `\s+`
  }

  Dialect dialect_;
  const uint8_t* bmp_;  // bmp_classes(), cached to skip the static-init guard per character
};

// ---------------------------------------------------------------------------------------------
// ICU fallback
// ---------------------------------------------------------------------------------------------

// Rewrites Oniguruma escapes whose meaning differs in ICU. Only \s and \S matter for the
// patterns tokenizers ship; both are valid inside and outside bracket expressions in ICU.
std::string onig_to_icu(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += "\\p{White_Space}";
      } else if (e == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += p[i];
        out += e;
      }
      ++i;
      continue;
    }
    out += p[i];
  }
  return out;
}

class IcuPattern final : public SplitPattern {
 public:
  IcuPattern(std::string_view pattern, const std::string& context) : context_(context) {
    const std::string icu_pattern = onig_to_icu(pattern);
    UErrorCode status = U_ZERO_ERROR;
    UParseError pe{};
    pattern_.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(icu_pattern), 0, pe, status));
    if (U_FAILURE(status) || !pattern_) {
      throw FormatError(context + ": cannot compile regex '" + std::string(pattern) + "' (" + u_errorName(status) +
                        " at offset " + std::to_string(pe.offset) + ")");
    }
  }

  void for_each_match(std::string_view text, FunctionRef<void(Span)> on_match) const override {
    UErrorCode status = U_ZERO_ERROR;
    // UText over the UTF-8 bytes makes ICU report native (byte) offsets, so no UTF-16 copy
    // or index translation is needed.
    std::unique_ptr<UText, decltype(&utext_close)> ut(
        utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status), &utext_close);
    std::unique_ptr<icu::RegexMatcher> m(pattern_->matcher(status));
    if (U_FAILURE(status)) throw Error(std::string("ICU regex matcher failed: ") + u_errorName(status));
    m->reset(ut.get());
    // ICU backtracks without bound: a pre-tokenizer regex like (a*)*b takes exponential time on a
    // long run of 'a's. Each find() gets kRegexTimeLimit steps of ICU's engine (about a millisecond
    // each); the shipped patterns need a few per word.
    m->setTimeLimit(kRegexTimeLimit, status);
    while (m->find(status) && U_SUCCESS(status)) {
      const auto b = static_cast<size_t>(m->start64(status));
      const auto e = static_cast<size_t>(m->end64(status));
      if (e > b) on_match(Span{b, e});
    }
    if (status == U_REGEX_TIME_OUT)
      throw InvalidArgumentError(context_ + ": the pre-tokenizer regex ran past its limit of " +
                                 std::to_string(kRegexTimeLimit) +
                                 " ICU steps on one match (catastrophic backtracking)");
    if (U_FAILURE(status)) throw Error(context_ + ": ICU regex search failed: " + u_errorName(status));
  }

  std::string engine() const override { return "icu"; }

 private:
  static constexpr int32_t kRegexTimeLimit = 1000;
  std::unique_ptr<icu::RegexPattern> pattern_;
  std::string context_;
};

class LiteralPattern final : public SplitPattern {
 public:
  explicit LiteralPattern(std::string literal) : literal_(std::move(literal)) {}

  void for_each_match(std::string_view text, FunctionRef<void(Span)> on_match) const override {
    if (literal_.empty()) return;
    size_t pos = 0;
    while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
      on_match(Span{pos, pos + literal_.size()});
      pos += literal_.size();
    }
  }

  std::string engine() const override { return "literal"; }

 private:
  std::string literal_;
};

// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in
// byte order, so every token is printable and whitespace-free.
struct ByteAlphabet {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};
  ByteAlphabet() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

std::unique_ptr<SplitPattern> compile_regex(std::string_view pattern, const std::string& context) {
  if (pattern == kQwen2Pattern) return std::make_unique<BuiltinPattern>(Dialect::kQwen2);
  if (pattern == kLlama3Pattern) return std::make_unique<BuiltinPattern>(Dialect::kLlama3);
  if (pattern == kGpt2Pattern) return std::make_unique<BuiltinPattern>(Dialect::kGpt2);
  return compile_regex_icu(pattern, context);
}

std::unique_ptr<SplitPattern> compile_regex_icu(std::string_view pattern, const std::string& context) {
  return std::make_unique<IcuPattern>(pattern, context);
}

std::unique_ptr<SplitPattern> compile_literal(std::string literal) {
  return std::make_unique<LiteralPattern>(std::move(literal));
}

char32_t byte_to_char(uint8_t b) noexcept { return alphabet().to_char[b]; }

int char_to_byte(char32_t c) noexcept {
  const auto& a = alphabet();
  return c < a.to_byte.size() ? a.to_byte[c] : -1;
}

bool is_white_space(char32_t c) noexcept { return (char_class(c) & kSpace) != 0; }

bool is_word_char(char32_t c) noexcept {
  const auto u = static_cast<UChar32>(c);
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL) ||
         (U_GET_GC_MASK(u) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

}  // namespace opchain::tokenizer_detail
