#include "engine/regex_grammar.h"

#include <bitset>
#include <cctype>
#include <string>
#include <vector>

#include "core/error.h"

namespace opchain {

namespace {

using Seq = Grammar::Sequence;

// A set of characters: ASCII by bit, non-ASCII as listed literals or "all of them".
struct CharSet {
  std::bitset<128> ascii;
  std::vector<std::string> non_ascii;  // UTF-8 of listed characters
  bool all_non_ascii = false;
};

constexpr int64_t kMaxRepeat = 1000;

class RegexParser {
 public:
  RegexParser(Grammar& g, std::string_view p) : g_(g), p_(p) {}

  int32_t parse() {
    if (peek('^')) ++pos_;
    const int32_t r = alternation();
    if (pos_ < p_.size()) fail("unexpected '" + std::string(1, p_[pos_]) + "'");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgumentError("pattern '" + std::string(p_) + "': " + what + " at offset " + std::to_string(pos_));
  }
  bool peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  bool at_end_anchor() const { return peek('$') && pos_ + 1 == p_.size(); }

  int32_t alternation() {
    std::vector<Seq> alts{concatenation()};
    while (peek('|')) {
      ++pos_;
      alts.push_back(concatenation());
    }
    return g_.add_rule("re_alt", std::move(alts));
  }

  Seq concatenation() {
    Seq seq;
    while (pos_ < p_.size() && !peek('|') && !peek(')')) {
      if (at_end_anchor()) {
        ++pos_;
        break;
      }
      const Seq atom_seq = atom();
      const Seq item = quantified(atom_seq);
      seq.insert(seq.end(), item.begin(), item.end());
    }
    return seq;
  }

  int64_t number() {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = v * 10 + (p_[pos_++] - '0');
      if (v > kMaxRepeat) fail("repetition count above " + std::to_string(kMaxRepeat));
    }
    if (pos_ == start) fail("expected a number in '{...}'");
    return v;
  }

  Seq quantified(const Seq& item) {
    int64_t min = 1, max = 1;
    if (peek('?'))
      min = 0, ++pos_;
    else if (peek('*'))
      min = 0, max = -1, ++pos_;
    else if (peek('+'))
      max = -1, ++pos_;
    else if (peek('{')) {
      ++pos_;
      min = max = number();
      if (peek(',')) {
        ++pos_;
        max = peek('}') ? -1 : number();
      }
      if (!peek('}')) fail("expected '}'");
      ++pos_;
      if (max >= 0 && max < min) fail("'{n,m}' with m below n");
    } else {
      return item;
    }
    if (peek('?')) ++pos_;  // lazy: the same strings
    if (peek('*') || peek('+') || peek('{')) fail("possessive or repeated quantifiers are not supported");
    return {add_repeat_rule(g_, "re_repeat", item, {}, min, max)};
  }

  // Decodes one UTF-8 character of the pattern.
  std::string utf8_char() {
    const auto b = static_cast<uint8_t>(p_[pos_]);
    const size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (len == 0 || pos_ + len > p_.size()) fail("the pattern is not valid UTF-8");
    std::string s(p_.substr(pos_, len));
    pos_ += len;
    return s;
  }

  Seq atom() {
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (peek('?')) {
        if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':')
          pos_ += 2;
        else
          fail("lookaround, named groups and inline flags are not supported");
      }
      const int32_t r = alternation();
      if (!peek(')')) fail("expected ')'");
      ++pos_;
      return {r};
    }
    if (c == '[') return {char_rule(char_class())};
    if (c == '.') {
      ++pos_;
      CharSet s;
      s.ascii.set();
      s.ascii.reset('\n');
      s.all_non_ascii = true;
      return {char_rule(s)};
    }
    if (c == '\\') {
      CharSet s;
      escape(s, /*in_class=*/false);
      return {char_rule(s)};
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("nothing to repeat");
    if (c == '^' || c == '$') fail("anchors are only supported at the start and the end");
    CharSet s;
    add_char(s, utf8_char());
    return {char_rule(s)};
  }

  static void add_char(CharSet& s, const std::string& ch) {
    if (ch.size() == 1)
      s.ascii.set(static_cast<uint8_t>(ch[0]));
    else
      s.non_ascii.push_back(ch);
  }

  // After a backslash: a class shorthand or an escaped character. Returns true for a shorthand.
  bool escape(CharSet& s, bool in_class) {
    ++pos_;
    if (pos_ >= p_.size()) fail("a trailing backslash");
    const char e = p_[pos_++];
    std::bitset<128> cls;
    switch (e) {
      case 'd':
      case 'D':
        for (char x = '0'; x <= '9'; ++x) cls.set(static_cast<size_t>(x));
        break;
      case 'w':
      case 'W':
        for (int x = 0; x < 128; ++x)
          if (std::isalnum(x) || x == '_') cls.set(static_cast<size_t>(x));
        break;
      case 's':
      case 'S':
        for (char x : std::string(" \t\n\r\f\v")) cls.set(static_cast<size_t>(x));
        break;
      case 'n':
        s.ascii.set('\n');
        return false;
      case 't':
        s.ascii.set('\t');
        return false;
      case 'r':
        s.ascii.set('\r');
        return false;
      case 'f':
        s.ascii.set('\f');
        return false;
      case 'v':
        s.ascii.set('\v');
        return false;
      default:
        if (std::isalnum(static_cast<unsigned char>(e)) || static_cast<unsigned char>(e) >= 0x80) {
          --pos_;
          fail(std::string("the escape '\\") + e + "' is not supported");
        }
        s.ascii.set(static_cast<uint8_t>(e));
        return false;
    }
    if (std::isupper(static_cast<unsigned char>(e))) {
      if (in_class) {
        --pos_;
        fail(std::string("'\\") + e + "' inside a class is not supported");
      }
      s.ascii |= ~cls;  // ASCII only: Python's \D, \W, \S exclude non-ASCII digits, letters, spaces
    } else {
      s.ascii |= cls;
    }
    return true;
  }

  CharSet char_class() {
    ++pos_;  // '['
    bool negated = false;
    if (peek('^')) negated = true, ++pos_;
    CharSet s;
    bool shorthand = false, first = true;
    while (pos_ < p_.size() && (first || !peek(']'))) {
      first = false;
      std::string lo;
      if (peek('\\')) {
        CharSet one;
        if (escape(one, true)) {
          s.ascii |= one.ascii;
          shorthand = true;
          continue;
        }
        for (int x = 0; x < 128; ++x)
          if (one.ascii.test(static_cast<size_t>(x))) lo = std::string(1, static_cast<char>(x));
      } else {
        lo = utf8_char();
      }
      if (peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        std::string hi;
        if (peek('\\')) {
          CharSet one;
          if (escape(one, true)) fail("a class shorthand cannot end a range");
          for (int x = 0; x < 128; ++x)
            if (one.ascii.test(static_cast<size_t>(x))) hi = std::string(1, static_cast<char>(x));
        } else {
          hi = utf8_char();
        }
        if (lo.size() != 1 || hi.size() != 1) fail("ranges over non-ASCII characters are not supported");
        if (hi[0] < lo[0]) fail("a range whose end is below its start");
        for (int x = lo[0]; x <= hi[0]; ++x) s.ascii.set(static_cast<size_t>(x));
      } else {
        add_char(s, lo);
      }
    }
    if (!peek(']')) fail("an unterminated '['");
    ++pos_;
    if (negated) {
      CharSet n;
      n.ascii = ~s.ascii;
      n.all_non_ascii = s.non_ascii.empty() && !shorthand;
      return n;
    }
    return s;
  }

  // The rule spelling each member as it appears inside a JSON string.
  int32_t char_rule(const CharSet& s) {
    std::vector<Seq> alts;
    ByteSet plain;
    for (int c = 0; c < 128; ++c) {
      if (!s.ascii.test(static_cast<size_t>(c))) continue;
      if (c >= 0x20 && c != '"' && c != '\\') {
        plain.set(static_cast<size_t>(c));
        continue;
      }
      std::string enc;
      switch (c) {
        case '"':
          enc = "\\\"";
          break;
        case '\\':
          enc = "\\\\";
          break;
        case '\n':
          enc = "\\n";
          break;
        case '\t':
          enc = "\\t";
          break;
        case '\r':
          enc = "\\r";
          break;
        case '\b':
          enc = "\\b";
          break;
        case '\f':
          enc = "\\f";
          break;
        default: {
          static const char* hex = "0123456789abcdef";
          enc = std::string("\\u00") + hex[c >> 4] + hex[c & 15];
        }
      }
      alts.push_back(g_.literal(enc));
    }
    if (plain.any()) alts.push_back({g_.terminal(plain)});
    for (const std::string& ch : s.non_ascii) alts.push_back(g_.literal(ch));
    if (s.all_non_ascii)
      for (Seq seq : utf8_multibyte_sequences(g_)) alts.push_back(std::move(seq));
    if (alts.empty()) fail("a character class that matches nothing");
    return g_.add_rule("re_char", std::move(alts));
  }

  Grammar& g_;
  std::string_view p_;
  size_t pos_ = 0;
};

}  // namespace

int32_t add_json_string_pattern_rule(Grammar& g, std::string_view pattern) { return RegexParser(g, pattern).parse(); }

}  // namespace opchain
