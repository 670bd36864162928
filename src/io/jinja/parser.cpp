#include "io/jinja/parser.h"

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/jinja/errors.h"
#include "io/jinja/globals.h"
#include "io/jinja/limits.h"
#include "io/jinja/methods.h"

namespace opchain::jinja::detail {

namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_template() {
    std::string which;
    Body body = parse_body({}, which, 0, "");
    // Calls can only reach builtins or macros: the context is JSON and holds no callables.
    for (const auto& [name, line] : called_) {
      if (declared_.count(name) != 0 || find_global(name) != nullptr) continue;
      if (name == "caller") fail_unsupported(line, "'caller()' (call blocks)");
      fail_unsupported(line, "function '" + name + "()'");
    }
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(std::size_t ahead = 0) const {
    const std::size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool at_op(std::string_view op) const { return peek().kind == Token::Kind::Op && peek().text == op; }
  bool at_name(std::string_view name) const { return peek().kind == Token::Kind::Name && peek().text == name; }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    fail_syntax(peek().line, "expected " + expected + ", got " + describe(peek()));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected("'" + std::string(op) + "'");
  }
  std::string expect_name(const std::string& what) {
    if (peek().kind != Token::Kind::Name) unexpected(what);
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != Token::Kind::BlockEnd) unexpected("end of statement block '%}'");
    next();
  }

  // ---- statements ----

  // Parses until one of `ends` appears as a block tag; consumes the tag name and stores it in
  // `which`, leaving the rest of that tag (e.g. an elif condition) to the caller.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string& which, int open_line,
                  std::string_view opener) {
    Body body;
    while (true) {
      const Token& t = peek();
      switch (t.kind) {
        case Token::Kind::End:
          if (ends.size() == 0) return body;
          fail_syntax(open_line, "'{% " + std::string(opener) + " %}' is never closed (expected '{% " +
                                     std::string(*(ends.end() - 1)) + " %}' before the end)");
        case Token::Kind::Data:
          body.push_back(std::make_unique<TextStmt>(t.line, t.text));
          next();
          break;
        case Token::Kind::VarBegin: {
          next();
          ExprPtr e = parse_tuple(true);
          if (peek().kind != Token::Kind::VarEnd) unexpected("end of print statement '}}'");
          next();
          body.push_back(std::make_unique<OutputStmt>(t.line, std::move(e)));
          break;
        }
        case Token::Kind::BlockBegin: {
          next();
          if (peek().kind != Token::Kind::Name) unexpected("a tag name");
          const std::string& name = peek().text;
          if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
            which = next().text;
            return body;
          }
          body.push_back(parse_statement());
          break;
        }
        default:
          unexpected("template text or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    const int line = peek().line;
    DepthGuard guard(depth_, line);  // nested blocks recurse here as expressions do
    const std::string tag = next().text;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "filter") return parse_filter_block(line);
    if (tag == "with") return parse_with(line);
    if (tag == "generation") {
      auto s = std::make_unique<PlainBlockStmt>(line);
      expect_block_end();
      std::string which;
      s->body = parse_body({"endgeneration"}, which, line, "generation");
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail_syntax(line, "'{% " + tag + " %}' outside of a for loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(line, tag == "break");
    }
    static const std::set<std::string, std::less<>> kClosers = {"elif",          "else",     "endif",     "endfor",
                                                                "endset",        "endmacro", "endfilter", "endwith",
                                                                "endgeneration", "endraw",   "endcall",   "endblock"};
    if (kClosers.count(tag) != 0) fail_syntax(line, "unexpected '{% " + tag + " %}'");
    fail_unsupported(line, "tag '{% " + tag + " %}'");
  }

  StmtPtr parse_if(int line) {
    auto s = std::make_unique<IfStmt>(line);
    ExprPtr cond = parse_expression();
    expect_block_end();
    while (true) {
      std::string which;
      Body body = parse_body({"elif", "else", "endif"}, which, line, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (which == "elif") {
        cond = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (which == "else") {
        s->otherwise = parse_body({"endif"}, which, line, "if");
        expect_block_end();
      }
      return s;
    }
  }

  Target parse_target(bool allow_attr, bool allow_unpack) {
    Target t;
    const bool parens = allow_unpack && skip_op("(");
    t.names.push_back(expect_name("a variable name"));
    if (allow_attr && !parens && at_op(".")) {
      next();
      t.attr = expect_name("an attribute name");
      return t;
    }
    while (allow_unpack && skip_op(",")) {
      t.unpack = true;
      if (peek().kind != Token::Kind::Name || at_name("in")) break;
      t.names.push_back(expect_name("a variable name"));
    }
    if (parens) {
      t.unpack = true;
      expect_op(")");
    }
    for (const auto& n : t.names) declared_.insert(n);
    return t;
  }

  StmtPtr parse_for(int line) {
    auto s = std::make_unique<ForStmt>(line);
    s->target = parse_target(false, true);
    if (!skip_name("in")) unexpected("'in'");
    s->iter = parse_tuple(false);
    if (skip_name("if")) s->filter = parse_expression();
    if (at_name("recursive")) fail_unsupported(peek().line, "recursive for loops");
    expect_block_end();
    std::string which;
    ++loop_depth_;
    s->body = parse_body({"else", "endfor"}, which, line, "for");
    --loop_depth_;
    expect_block_end();
    if (which == "else") {
      s->otherwise = parse_body({"endfor"}, which, line, "for");
      expect_block_end();
    }
    return s;
  }

  StmtPtr parse_set(int line) {
    Target target = parse_target(true, true);
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(line);
      s->target = std::move(target);
      s->value = parse_tuple(true);
      expect_block_end();
      return s;
    }
    auto s = std::make_unique<SetBlockStmt>(line);
    s->target = std::move(target);
    if (s->target.unpack) fail_syntax(line, "a block {% set %} assigns a single name");
    if (at_op("|")) {
      ExprPtr chain = std::make_unique<BlockInput>(line);
      while (skip_op("|")) chain = parse_filter(std::move(chain));
      s->filters = std::move(chain);
    }
    expect_block_end();
    std::string which;
    s->body = parse_body({"endset"}, which, line, "set");
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = std::make_unique<MacroStmt>(line);
    s->name = expect_name("a macro name");
    declared_.insert(s->name);
    expect_op("(");
    while (!skip_op(")")) {
      if (!s->params.empty()) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      std::string param = expect_name("a parameter name");
      declared_.insert(param);
      ExprPtr def;
      if (skip_op("=")) def = parse_expression();
      s->params.emplace_back(std::move(param), std::move(def));
    }
    expect_block_end();
    // break/continue cannot cross a macro boundary.
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string which;
    s->body = parse_body({"endmacro"}, which, line, "macro");
    loop_depth_ = saved_loops;
    if (peek().kind == Token::Kind::Name) next();  // optional `{% endmacro name %}`
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = std::make_unique<FilterBlockStmt>(line);
    ExprPtr chain = parse_filter(std::make_unique<BlockInput>(line));
    while (skip_op("|")) chain = parse_filter(std::move(chain));
    s->filters = std::move(chain);
    expect_block_end();
    std::string which;
    s->body = parse_body({"endfilter"}, which, line, "filter");
    expect_block_end();
    return s;
  }

  StmtPtr parse_with(int line) {
    auto s = std::make_unique<WithStmt>(line);
    while (peek().kind != Token::Kind::BlockEnd) {
      std::string name = expect_name("a variable name");
      declared_.insert(name);
      expect_op("=");
      s->assignments.emplace_back(std::move(name), parse_expression());
      if (!skip_op(",")) break;
    }
    expect_block_end();
    std::string which;
    s->body = parse_body({"endwith"}, which, line, "with");
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // Recursion guard: each nesting level of an expression costs a few native frames.
  struct DepthGuard {
    DepthGuard(int& d, int line) : depth(d) {
      if (++depth > kMaxNesting) fail_syntax(line, "expression nested too deeply");
    }
    ~DepthGuard() { --depth; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    int& depth;
  };

  // Sets a new node's height from its operands' and refuses a tree taller than kMaxNesting: evaluating
  // and destroying an expression recurse once per level, and the chain loops below (a + b + c ...,
  // x.a.b.c, x|f|g) build levels without the parser itself recursing. See Note [Template limits].
  ExprPtr finish(ExprPtr node) {
    node->height = node->tallest_child() + 1;
    if (node->height > kMaxNesting) {
      fail_syntax(node->line, "expression nested deeper than " + std::to_string(kMaxNesting) +
                                  " levels (each link of an operator, filter or attribute chain is a level)");
    }
    return node;
  }

  bool at_tuple_end() const {
    const auto k = peek().kind;
    return k == Token::Kind::VarEnd || k == Token::Kind::BlockEnd || at_op(")");
  }

  // Comma-separated expressions without brackets form a tuple (`{% set a = 1, 2 %}`).
  ExprPtr parse_tuple(bool with_condexpr) {
    const int line = peek().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (at_tuple_end()) break;
      items.push_back(with_condexpr ? parse_expression() : parse_or());
      if (at_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (items.empty()) unexpected("an expression");
      return std::move(items[0]);
    }
    auto t = std::make_unique<ListLit>(line, true);
    t->items = std::move(items);
    return finish(std::move(t));
  }

  ExprPtr parse_expression() {
    DepthGuard guard(depth_, peek().line);
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      const int line = next().line;
      auto c = std::make_unique<CondExpr>(line);
      c->cond = parse_or();
      if (skip_name("else")) c->otherwise = parse_expression();
      c->then = std::move(expr);
      expr = finish(std::move(c));
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      const int line = next().line;
      left = finish(std::make_unique<LogicalExpr>(line, false, std::move(left), parse_and()));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      const int line = next().line;
      left = finish(std::make_unique<LogicalExpr>(line, true, std::move(left), parse_not()));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      const int line = next().line;
      DepthGuard guard(depth_, line);
      return finish(std::make_unique<UnaryExpr>(line, '!', parse_not()));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    std::vector<std::pair<std::string, ExprPtr>> rest;
    while (true) {
      if (peek().kind == Token::Kind::Op &&
          (at_op("==") || at_op("!=") || at_op("<") || at_op("<=") || at_op(">") || at_op(">="))) {
        std::string op = next().text;
        rest.emplace_back(std::move(op), parse_math1());
      } else if (skip_name("in")) {
        rest.emplace_back("in", parse_math1());
      } else if (at_name("not") && peek(1).kind == Token::Kind::Name && peek(1).text == "in") {
        next();
        next();
        rest.emplace_back("notin", parse_math1());
      } else {
        break;
      }
    }
    if (rest.empty()) return first;
    auto c = std::make_unique<CompareExpr>(line);
    c->first = std::move(first);
    c->rest = std::move(rest);
    return finish(std::move(c));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = next();
      left = finish(std::make_unique<BinaryExpr>(op.line, op.text, std::move(left), parse_concat()));
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_op("~")) {
      const int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(line, "~", std::move(left), parse_math2()));
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = next();
      left = finish(std::make_unique<BinaryExpr>(op.line, op.text, std::move(left), parse_pow()));
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (at_op("**")) {
      const int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(line, "**", std::move(left), parse_unary(true)));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const int line = peek().line;
    DepthGuard guard(depth_, line);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      const char op = next().text[0];
      node = finish(std::make_unique<UnaryExpr>(line, op, parse_unary(false)));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    const int line = t.line;
    switch (t.kind) {
      case Token::Kind::Name: {
        const std::string name = next().text;
        if (name == "true" || name == "True") return std::make_unique<Literal>(line, Value::boolean(true));
        if (name == "false" || name == "False") return std::make_unique<Literal>(line, Value::boolean(false));
        if (name == "none" || name == "None") return std::make_unique<Literal>(line, Value::none());
        return std::make_unique<NameRef>(line, name);
      }
      case Token::Kind::String: {
        // Adjacent string literals concatenate, as in Python.
        std::string s;
        while (peek().kind == Token::Kind::String) s += next().text;
        return std::make_unique<Literal>(line, Value::string(std::move(s)));
      }
      case Token::Kind::Int:
        return std::make_unique<Literal>(line, Value::integer(next().int_value));
      case Token::Kind::Float:
        return std::make_unique<Literal>(line, Value::number(next().float_value));
      case Token::Kind::Op:
        if (t.text == "(") {
          next();
          if (skip_op(")")) return std::make_unique<ListLit>(line, true);  // empty tuple
          ExprPtr inner = parse_tuple(true);
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          next();
          auto list = std::make_unique<ListLit>(line, false);
          while (!skip_op("]")) {
            if (!list->items.empty()) {
              expect_op(",");
              if (skip_op("]")) break;
            }
            list->items.push_back(parse_expression());
          }
          return finish(std::move(list));
        }
        if (t.text == "{") {
          next();
          auto dict = std::make_unique<DictLit>(line);
          while (!skip_op("}")) {
            if (!dict->pairs.empty()) {
              expect_op(",");
              if (skip_op("}")) break;
            }
            ExprPtr key = parse_expression();
            expect_op(":");
            dict->pairs.emplace_back(std::move(key), parse_expression());
          }
          return finish(std::move(dict));
        }
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (at_op(".")) {
        const int line = next().line;
        const Token& t = next();
        if (t.kind == Token::Kind::Name) {
          node = finish(std::make_unique<GetAttr>(line, std::move(node), t.text));
        } else if (t.kind == Token::Kind::Int) {
          node = finish(std::make_unique<GetItem>(line, std::move(node),
                                                  std::make_unique<Literal>(line, Value::integer(t.int_value))));
        } else {
          fail_syntax(t.line, "expected an attribute name after '.', got " + describe(t));
        }
      } else if (at_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = next().line;  // '['
    ExprPtr start;
    if (!at_op(":")) start = parse_expression();
    if (!at_op(":")) {
      expect_op("]");
      return finish(std::make_unique<GetItem>(line, std::move(node), std::move(start)));
    }
    next();  // ':'
    auto s = std::make_unique<SliceExpr>(line);
    s->object = std::move(node);
    s->start = std::move(start);
    if (!at_op("]") && !at_op(":")) s->stop = parse_expression();
    if (skip_op(":") && !at_op("]")) s->step = parse_expression();
    expect_op("]");
    return finish(std::move(s));
  }

  ArgExprs parse_args() {
    // The '(' has been consumed.
    ArgExprs args;
    bool first = true;
    while (!skip_op(")")) {
      if (!first) {
        expect_op(",");
        if (skip_op(")")) break;
      }
      first = false;
      if (at_op("*") || at_op("**")) fail_unsupported(peek().line, "*args / **kwargs in calls");
      if (peek().kind == Token::Kind::Name && peek(1).kind == Token::Kind::Op && peek(1).text == "=") {
        std::string name = next().text;
        next();
        args.keyword.emplace_back(std::move(name), parse_expression());
      } else {
        if (!args.keyword.empty()) {
          fail_syntax(peek().line, "positional argument follows keyword argument");
        }
        args.positional.push_back(parse_expression());
      }
    }
    return args;
  }

  ExprPtr parse_call(ExprPtr callee) {
    const int line = next().line;  // '('
    if (const auto* attr = dynamic_cast<const GetAttr*>(callee.get())) {
      if (!is_known_method(attr->name)) fail_unsupported(line, "method '." + attr->name + "()'");
    } else if (const auto* name = dynamic_cast<const NameRef*>(callee.get())) {
      called_.emplace_back(name->name, line);
    }
    auto call = std::make_unique<CallExpr>(line);
    call->callee = std::move(callee);
    call->args = parse_args();
    return finish(std::move(call));
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (skip_op("|")) {
        node = parse_filter(std::move(node));
      } else if (at_name("is")) {
        node = parse_test(std::move(node));
      } else if (at_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter(ExprPtr operand) {
    const int line = peek().line;
    auto f = std::make_unique<FilterExpr>(line);
    f->name = expect_name("a filter name");
    f->fn = find_filter(f->name);
    if (f->fn == nullptr) fail_unsupported(line, "filter '" + f->name + "'");
    f->operand = std::move(operand);
    if (skip_op("(")) f->args = parse_args();
    return finish(std::move(f));
  }

  ExprPtr parse_test(ExprPtr operand) {
    const int line = next().line;  // 'is'
    auto t = std::make_unique<TestExpr>(line);
    t->negated = skip_name("not");
    t->name = expect_name("a test name");
    t->fn = find_test(t->name);
    if (t->fn == nullptr) fail_unsupported(line, "test '" + t->name + "'");
    t->operand = std::move(operand);
    if (skip_op("(")) {
      t->args = parse_args();
    } else {
      // `x is divisibleby 3`, `x is sameas false`: one bare argument, as jinja2 allows.
      const Token& p = peek();
      static const std::set<std::string, std::less<>> kStop = {"else", "or", "and", "if", "is", "in", "not"};
      const bool starts_arg = p.kind == Token::Kind::String || p.kind == Token::Kind::Int ||
                              p.kind == Token::Kind::Float || at_op("[") || at_op("{") ||
                              (p.kind == Token::Kind::Name && kStop.count(p.text) == 0);
      if (starts_arg) t->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return finish(std::move(t));
  }

  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
  std::set<std::string, std::less<>> declared_;      // names any set/for/macro/with introduces
  std::vector<std::pair<std::string, int>> called_;  // plain function calls, checked at the end
};

}  // namespace

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace opchain::jinja::detail
