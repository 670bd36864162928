#pragma once
// Parser: recursive descent with Jinja2's precedence (jinja2/parser.py):
//   condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix/filters
#include <vector>

#include "io/jinja/ast.h"
#include "io/jinja/lexer.h"

namespace opchain::jinja::detail {

// The template's body. Unknown tags, filters, tests, methods and functions fail here (FormatError),
// before any rendering.
Body parse(std::vector<Token> tokens);

}  // namespace opchain::jinja::detail
