#pragma once
// Lexer. Mirrors jinja2.lexer: data between tags, whitespace control (-, +), trim_blocks,
// lstrip_blocks, raw blocks, and bracket balancing so `}}` inside a dict literal does not end a
// print tag.
#include <cstdint>
#include <string>
#include <vector>

#include "io/jinja.h"

namespace opchain::jinja::detail {

struct Token {
  enum class Kind { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Kind kind = Kind::End;
  std::string text;  // data text, name, decoded string literal, or operator
  std::int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

// How a token is named in "expected X, got Y" messages.
std::string describe(const Token& t);

// The whole source as tokens, ending with Kind::End. Fails with FormatError on bad syntax.
std::vector<Token> lex(const std::string& source, const Options& options);

}  // namespace opchain::jinja::detail
