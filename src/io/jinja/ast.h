#pragma once
// AST. Expressions evaluate to Values; statements write to the interpreter's output.
// The nodes' eval_node/exec are defined in evaluator.cpp; the parser builds them.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/jinja/filters.h"
#include "io/jinja/tests.h"
#include "io/jinja/value.h"

namespace opchain::jinja::detail {

struct Expr {
  explicit Expr(int l) : line(l) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Counts the render's depth and work (Note [Template limits]), then runs eval_node.
  Value eval(Interpreter& in) const;
  virtual Value eval_node(Interpreter& in) const = 0;
  // The tallest operand's height (0 for a leaf); the parser sets `height` from it.
  virtual int tallest_child() const { return 0; }
  int line;
  int height = 1;
};
using ExprPtr = std::unique_ptr<Expr>;

inline int height_of(const ExprPtr& e) { return e ? e->height : 0; }
inline int height_of(const std::vector<ExprPtr>& es) {
  int h = 0;
  for (const auto& e : es) h = std::max(h, height_of(e));
  return h;
}

struct Literal : Expr {
  Literal(int l, Value v) : Expr(l), value(std::move(v)) {}
  Value eval_node(Interpreter&) const override { return value; }
  Value value;
};

struct NameRef : Expr {
  NameRef(int l, std::string n) : Expr(l), name(std::move(n)) {}
  Value eval_node(Interpreter& in) const override;
  std::string name;
};

// List literals and tuples alike.
struct ListLit : Expr {
  ListLit(int l, bool tuple) : Expr(l), is_tuple(tuple) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(items); }
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictLit : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    int h = 0;
    for (const auto& [k, v] : pairs) h = std::max({h, height_of(k), height_of(v)});
    return h;
  }
  std::vector<std::pair<ExprPtr, ExprPtr>> pairs;
};

struct GetAttr : Expr {
  GetAttr(int l, ExprPtr o, std::string n) : Expr(l), object(std::move(o)), name(std::move(n)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(object); }
  ExprPtr object;
  std::string name;
};

struct GetItem : Expr {
  GetItem(int l, ExprPtr o, ExprPtr i) : Expr(l), object(std::move(o)), index(std::move(i)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(object), height_of(index)); }
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    return std::max({height_of(object), height_of(start), height_of(stop), height_of(step)});
  }
  ExprPtr object, start, stop, step;  // start/stop/step may be null
};

struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  int height() const {
    int h = height_of(positional);
    for (const auto& [k, v] : keyword) h = std::max(h, height_of(v));
    return h;
  }
};

struct CallExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(callee), args.height()); }
  ExprPtr callee;
  ArgExprs args;
};

struct FilterExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(operand), args.height()); }
  ExprPtr operand;
  std::string name;
  FilterFn fn = nullptr;
  ArgExprs args;
};

struct TestExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(operand), args.height()); }
  ExprPtr operand;
  std::string name;
  TestFn fn = nullptr;
  ArgExprs args;
  bool negated = false;
};

// The captured body of {% filter %} / {% set x | f %} blocks, fed into their filter chain.
struct BlockInput : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
};

struct UnaryExpr : Expr {
  UnaryExpr(int l, char o, ExprPtr e) : Expr(l), op(o), operand(std::move(e)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return height_of(operand); }
  char op;  // '-', '+', '!' (not)
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(int l, std::string o, ExprPtr a, ExprPtr b)
      : Expr(l), op(std::move(o)), left(std::move(a)), right(std::move(b)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(left), height_of(right)); }
  std::string op;
  ExprPtr left, right;
};

struct LogicalExpr : Expr {
  LogicalExpr(int l, bool a, ExprPtr x, ExprPtr y) : Expr(l), is_and(a), left(std::move(x)), right(std::move(y)) {}
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max(height_of(left), height_of(right)); }
  bool is_and;
  ExprPtr left, right;
};

struct CompareExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override {
    int h = height_of(first);
    for (const auto& [op, e] : rest) h = std::max(h, height_of(e));
    return h;
  }
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // op is ==, !=, <, <=, >, >=, in, notin
};

struct CondExpr : Expr {
  using Expr::Expr;
  Value eval_node(Interpreter& in) const override;
  int tallest_child() const override { return std::max({height_of(cond), height_of(then), height_of(otherwise)}); }
  ExprPtr cond, then, otherwise;  // otherwise may be null (-> Undefined)
};

enum class Flow { Normal, Break, Continue };

struct Stmt {
  explicit Stmt(int l) : line(l) {}
  virtual ~Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  virtual Flow exec(Interpreter& in) const = 0;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(l), text(std::move(t)) {}
  Flow exec(Interpreter& in) const override;
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(int l, ExprPtr e) : Stmt(l), expr(std::move(e)) {}
  Flow exec(Interpreter& in) const override;
  ExprPtr expr;
};

struct IfStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body otherwise;
};

// Assignment target of for/set: one name, several names to unpack, or `ns.attr`.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;
  std::string attr;  // non-empty: assign names[0].attr (namespace attribute)
};

struct ForStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  Body body;
  Body otherwise;
};

struct SetStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Target target;
  ExprPtr filters;  // chain over BlockInput; may be null
  Body body;
};

struct MacroStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Value invoke(Interpreter& in, CallArgs& args) const;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
};

struct FilterBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  ExprPtr filters;
  Body body;
};

struct WithStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};

// {% generation %} (transformers' assistant-mask extension) renders its body unchanged.
struct PlainBlockStmt : Stmt {
  using Stmt::Stmt;
  Flow exec(Interpreter& in) const override;
  Body body;
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(int l, bool b) : Stmt(l), is_break(b) {}
  Flow exec(Interpreter&) const override { return is_break ? Flow::Break : Flow::Continue; }
  bool is_break;
};

}  // namespace opchain::jinja::detail
