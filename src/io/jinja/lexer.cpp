#include "io/jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "io/jinja/errors.h"
#include "io/jinja/python_string.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

std::string describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::Data:
      return "template text";
    case Token::Kind::VarBegin:
      return "'{{'";
    case Token::Kind::VarEnd:
      return "end of print statement '}}'";
    case Token::Kind::BlockBegin:
      return "'{%'";
    case Token::Kind::BlockEnd:
      return "end of statement block '%}'";
    case Token::Kind::String:
      return "string literal";
    case Token::Kind::Int:
    case Token::Kind::Float:
      return "number '" + t.text + "'";
    case Token::Kind::End:
      return "end of template";
    default:
      return "'" + t.text + "'";
  }
}

namespace {

// Python's "unicode-escape" codec, which Jinja2 applies to string literals.
std::string unescape_string(const std::string& raw, int line) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    auto read_hex = [&](std::size_t count) -> char32_t {
      char32_t v = 0;
      for (std::size_t k = 1; k <= count; ++k) {
        if (i + k >= raw.size()) fail_syntax(line, "truncated escape in string literal");
        const char h = raw[i + k];
        int d;
        if (h >= '0' && h <= '9') {
          d = h - '0';
        } else if (h >= 'a' && h <= 'f') {
          d = h - 'a' + 10;
        } else if (h >= 'A' && h <= 'F') {
          d = h - 'A' + 10;
        } else {
          fail_syntax(line, "bad hex digit in string literal escape");
        }
        v = v * 16 + static_cast<char32_t>(d);
      }
      i += count;
      return v;
    };
    switch (c) {
      case '\n':
        break;  // backslash-newline is a line continuation
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
        append_utf8(out, read_hex(2));
        break;
      case 'u':
        append_utf8(out, read_hex(4));
        break;
      case 'U': {
        const char32_t cp = read_hex(8);
        if (cp > 0x10FFFF) fail_syntax(line, "\\U escape out of range in string literal");
        append_utf8(out, cp);
        break;
      }
      case 'N':
        fail_unsupported(line, "\\N{...} escape in string literal");
      default:
        if (c >= '0' && c <= '7') {
          char32_t v = static_cast<char32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) {
            v = v * 8 + static_cast<char32_t>(raw[++i] - '0');
          }
          append_utf8(out, v);
        } else {
          // Unknown escapes keep their backslash, as Python does.
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& source, const Options& options) : src_(source), opt_(options) {}

  std::vector<Token> run() {
    bool line_starting = true;  // jinja2: did the previous match end with a newline?
    while (pos_ < src_.size()) {
      const std::size_t tag = find_tag(pos_);
      const std::size_t text_end = tag == std::string::npos ? src_.size() : tag;
      std::string text = src_.substr(pos_, text_end - pos_);
      const int text_line = line_;
      if (tag == std::string::npos) {
        emit_data(std::move(text), text_line);
        advance(src_.size());
        break;
      }
      const char kind = src_[tag + 1];
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const bool has_mod = mod == '-' || mod == '+';
      if (mod == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (mod != '+' && opt_.lstrip_blocks && kind != '{') {
        lstrip_line(text, line_starting);
      }
      emit_data(std::move(text), text_line);
      advance(tag + 2 + (has_mod ? 1 : 0));
      if (kind == '#') {
        line_starting = lex_comment();
      } else if (kind == '%' && at_raw()) {
        line_starting = lex_raw();
      } else {
        line_starting = lex_tag(kind == '%');
      }
    }
    tokens_.push_back(Token{Token::Kind::End, "", 0, 0.0, line_});
    return std::move(tokens_);
  }

 private:
  static bool inline_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

  // lstrip_blocks: drop spaces/tabs between the start of the line and a block/comment tag.
  void lstrip_line(std::string& text, bool line_starting) const {
    const std::size_t nl = text.rfind('\n');
    const std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l_pos), text.end(), inline_space)) {
      text.resize(l_pos);
    }
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void advance(std::size_t to) {
    for (std::size_t i = pos_; i < to; ++i) {
      if (src_[i] == '\n') ++line_;
    }
    pos_ = to;
  }

  void emit_data(std::string text, int line) {
    if (text.empty()) return;
    tokens_.push_back(Token{Token::Kind::Data, std::move(text), 0, 0.0, line});
  }

  bool starts_with(std::size_t at, std::string_view s) const { return src_.compare(at, s.size(), s) == 0; }

  // Consumes the closing marker at pos_ (length len) plus the whitespace control that follows.
  // Returns whether the consumed text ended with a newline (jinja2's line_starting).
  bool finish_tag(std::size_t len, char mod, bool trims) {
    std::size_t after = pos_ + len;
    if (mod == '-') {
      while (after < src_.size() && is_py_space(src_[after])) ++after;
    } else if (mod != '+' && trims && opt_.trim_blocks && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    advance(after);
    return src_[after - 1] == '\n';
  }

  bool lex_comment() {
    const int start_line = line_;
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail_syntax(start_line, "unterminated comment '{#'");
    char mod = '\0';
    if (end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+')) mod = src_[end - 1];
    advance(end);
    return finish_tag(2, mod, true);
  }

  // Is the block tag starting at pos_ `{% raw %}`? Its content is not lexed at all.
  bool at_raw() const {
    std::size_t i = pos_;
    while (i < src_.size() && is_py_space(src_[i])) ++i;
    if (!starts_with(i, "raw")) return false;
    i += 3;
    while (i < src_.size() && is_py_space(src_[i])) ++i;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    return starts_with(i, "%}");
  }

  bool lex_raw() {
    const int start_line = line_;
    // Close the opening tag. jinja2 strips after `-%}` but applies no trim_blocks here.
    std::size_t i = src_.find("%}", pos_);
    const char mod = src_[i - 1] == '-' ? '-' : '\0';
    advance(i);
    bool line_starting = finish_tag(2, mod, false);
    // Find `{%[-+]? endraw [-+]?%}`.
    for (std::size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 1)) {
      std::size_t j = at + 2;
      const char open_mod = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : '\0';
      if (open_mod != '\0') ++j;
      while (j < src_.size() && is_py_space(src_[j])) ++j;
      if (!starts_with(j, "endraw")) continue;
      j += 6;
      while (j < src_.size() && is_py_space(src_[j])) ++j;
      const char close_mod = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : '\0';
      if (close_mod != '\0') ++j;
      if (!starts_with(j, "%}")) continue;
      std::string text = src_.substr(pos_, at - pos_);
      if (open_mod == '-') {
        text = py_strip(text, std::nullopt, false, true);
      } else if (open_mod != '+' && opt_.lstrip_blocks) {
        lstrip_line(text, line_starting);
      }
      emit_data(std::move(text), line_);
      advance(j);
      line_starting = finish_tag(2, close_mod, true);
      return line_starting;
    }
    fail_syntax(start_line, "missing '{% endraw %}' for '{% raw %}'");
  }

  // Tokenizes an expression tag up to its end marker. Returns line_starting for the lexer.
  bool lex_tag(bool block) {
    const int start_line = line_;
    tokens_.push_back(
        Token{block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, block ? "{%" : "{{", 0, 0.0, line_});
    int depth = 0;
    bool after_dot = false;
    while (true) {
      std::size_t i = pos_;
      while (i < src_.size() && is_py_space(src_[i])) ++i;
      advance(i);
      if (pos_ >= src_.size()) {
        fail_syntax(start_line, std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") + "'");
      }
      if (depth == 0) {
        const std::string_view end = block ? "%}" : "}}";
        const char c = src_[pos_];
        if ((c == '-' || (c == '+' && block)) && starts_with(pos_ + 1, end)) {
          tokens_.push_back(
              Token{block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, std::string(end), 0, 0.0, line_});
          advance(pos_ + 1);
          return finish_tag(2, c, block);
        }
        if (starts_with(pos_, end)) {
          tokens_.push_back(
              Token{block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, std::string(end), 0, 0.0, line_});
          return finish_tag(2, '\0', block);
        }
      }
      Token t = lex_token(after_dot);
      after_dot = t.kind == Token::Kind::Op && t.text == ".";
      if (t.kind == Token::Kind::Op) {
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
      }
      tokens_.push_back(std::move(t));
    }
  }

  Token lex_token(bool after_dot) {
    const int line = line_;
    const char c = src_[pos_];
    if (c == '\'' || c == '"') {
      std::size_t i = pos_ + 1;
      while (i < src_.size() && src_[i] != c) {
        if (src_[i] == '\\') ++i;
        ++i;
      }
      if (i >= src_.size()) fail_syntax(line, "unterminated string literal");
      std::string raw = src_.substr(pos_ + 1, i - pos_ - 1);
      advance(i + 1);
      return Token{Token::Kind::String, unescape_string(raw, line), 0, 0.0, line};
    }
    if (ascii_digit(c)) {
      std::size_t i = pos_;
      auto digits = [&] {
        while (i < src_.size() && (ascii_digit(src_[i]) || src_[i] == '_')) ++i;
      };
      digits();
      bool is_float = false;
      // After a dot (foo.0.1) numbers are item indices, never floats.
      if (!after_dot && i + 1 < src_.size() && src_[i] == '.' && ascii_digit(src_[i + 1])) {
        ++i;
        digits();
        is_float = true;
      }
      if (!after_dot && i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
        if (j < src_.size() && ascii_digit(src_[j])) {
          i = j;
          digits();
          is_float = true;
        }
      }
      std::string text = src_.substr(pos_, i - pos_);
      std::string clean;
      for (const char ch : text) {
        if (ch != '_') clean += ch;
      }
      advance(i);
      Token t{is_float ? Token::Kind::Float : Token::Kind::Int, text, 0, 0.0, line};
      if (is_float) {
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), t.float_value);
        if (res.ec != std::errc()) fail_syntax(line, "bad float literal '" + text + "'");
      } else {
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), t.int_value);
        if (res.ec != std::errc()) fail_syntax(line, "integer literal out of range '" + text + "'");
      }
      return t;
    }
    if (ascii_alpha(c) || c == '_') {
      std::size_t i = pos_;
      while (i < src_.size() && (ascii_alpha(src_[i]) || ascii_digit(src_[i]) || src_[i] == '_')) {
        ++i;
      }
      Token t{Token::Kind::Name, src_.substr(pos_, i - pos_), 0, 0.0, line};
      advance(i);
      return t;
    }
    static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const auto op : kTwoChar) {
      if (starts_with(pos_, op)) {
        advance(pos_ + 2);
        return Token{Token::Kind::Op, std::string(op), 0, 0.0, line};
      }
    }
    static constexpr std::string_view kOneChar = "+-*/%~<>()[]{},.:|=;";
    if (kOneChar.find(c) != std::string_view::npos) {
      advance(pos_ + 1);
      return Token{Token::Kind::Op, std::string(1, c), 0, 0.0, line};
    }
    fail_syntax(line, std::string("unexpected character '") + c + "'");
  }

  const std::string& src_;
  Options opt_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const Options& options) { return Lexer(source, options).run(); }

}  // namespace opchain::jinja::detail
