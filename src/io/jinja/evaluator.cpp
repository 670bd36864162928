// How each AST node (ast.h) evaluates or runs against the Interpreter (interpreter.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "io/jinja/access.h"
#include "io/jinja/arguments.h"
#include "io/jinja/ast.h"
#include "io/jinja/errors.h"
#include "io/jinja/interpreter.h"
#include "io/jinja/limits.h"
#include "io/jinja/methods.h"
#include "io/jinja/operators.h"
#include "io/jinja/repr.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

namespace {

CallArgs eval_args(Interpreter& in, const ArgExprs& exprs, int line) {
  CallArgs args;
  args.line = line;
  args.positional.reserve(exprs.positional.size());
  for (const auto& e : exprs.positional) args.positional.push_back(e->eval(in));
  for (const auto& [name, e] : exprs.keyword) args.keyword.emplace_back(name, e->eval(in));
  return args;
}

// What a builtin walking over `v` may cost: its items, or its bytes in 64-byte steps.
std::int64_t walk_cost(const Value& v) {
  if (v.is_list()) return static_cast<std::int64_t>(v.items().size());
  if (v.is_dict()) return static_cast<std::int64_t>(v.dict().entries.size());
  if (v.is_string()) return static_cast<std::int64_t>(v.str().size() / 64);
  return 0;
}

void assign(Interpreter& in, const Target& target, Value value, int line) {
  if (!target.attr.empty()) {
    const Value ns = in.lookup(target.names[0]);
    if (!ns.is_namespace()) {
      fail_render(line, "cannot assign attribute '" + target.attr + "' on '" + target.names[0] + "', which is a " +
                            type_name(ns) + ", not a namespace()");
    }
    ns.as<NamespacePtr>()->attrs.set(target.attr, std::move(value));
    return;
  }
  if (!target.unpack) {
    in.frame->set(target.names[0], std::move(value));
    return;
  }
  ListPtr items = iterate(value, line);
  if (items->size() != target.names.size()) {
    fail_render(line, "cannot unpack " + std::to_string(items->size()) + " value(s) into " +
                          std::to_string(target.names.size()) + " names");
  }
  for (std::size_t i = 0; i < items->size(); ++i) in.frame->set(target.names[i], (*items)[i]);
}

}  // namespace

// ---- expressions ----

Value Expr::eval(Interpreter& in) const {
  Interpreter::Level level(in, line);
  return eval_node(in);
}

Value NameRef::eval_node(Interpreter& in) const { return in.lookup(name); }

Value ListLit::eval_node(Interpreter& in) const {
  List out;
  out.reserve(items.size());
  out.is_tuple = is_tuple;
  for (const auto& e : items) out.push_back(e->eval(in));
  return Value::list(std::move(out));
}

Value DictLit::eval_node(Interpreter& in) const {
  Dict d;
  for (const auto& [k, v] : pairs) {
    Value key = k->eval(in);
    if (!key.is_string()) {
      // Python allows any hashable key; JSON-shaped values only ever have string keys.
      fail_unsupported(line, "dict literal key of type '" + type_name(key) + "' (only strings)");
    }
    d.set(key.str(), v->eval(in));
  }
  return Value::dict(std::move(d));
}

Value GetAttr::eval_node(Interpreter& in) const { return get_attr(object->eval(in), name, line); }

Value GetItem::eval_node(Interpreter& in) const {
  Value obj = object->eval(in);
  return get_item(obj, index->eval(in), line);
}

Value SliceExpr::eval_node(Interpreter& in) const {
  Value obj = object->eval(in);
  if (obj.is_undefined()) fail_undefined(obj, line);
  auto opt = [&](const ExprPtr& e) { return e ? e->eval(in) : Value::none(); };
  const Value a = opt(start);
  const Value b = opt(stop);
  const Value c = opt(step);
  if (obj.is_list()) {
    List out;
    for (const std::size_t i : slice_positions(obj.items().size(), a, b, c, line)) out.push_back(obj.items()[i]);
    return Value::list(std::move(out));
  }
  if (obj.is_string()) {
    const auto offsets = utf8_offsets(obj.str());
    std::string out;
    for (const std::size_t i : slice_positions(offsets.size() - 1, a, b, c, line)) {
      out.append(obj.str(), offsets[i], offsets[i + 1] - offsets[i]);
    }
    return Value::string(std::move(out));
  }
  fail_render(line, "'" + type_name(obj) + "' object is not subscriptable");
}

Value CallExpr::eval_node(Interpreter& in) const {
  if (const auto* attr = dynamic_cast<const GetAttr*>(callee.get())) {
    Value obj = attr->object->eval(in);
    CallArgs a = eval_args(in, args, line);
    in.charge(walk_cost(obj), line);
    for (const auto& arg : a.positional) in.charge(walk_cost(arg), line);
    return call_method(in, obj, attr->name, a);
  }
  Value fn = callee->eval(in);
  CallArgs a = eval_args(in, args, line);
  if (fn.is_function()) return fn.as<FunctionPtr>()->invoke(in, a);
  if (fn.is_undefined()) fail_undefined(fn, line);
  fail_render(line, "'" + type_name(fn) + "' object is not callable");
}

Value FilterExpr::eval_node(Interpreter& in) const {
  Value input = operand->eval(in);
  CallArgs a = eval_args(in, args, line);
  in.charge(walk_cost(input), line);
  return fn(in, input, a);
}

Value TestExpr::eval_node(Interpreter& in) const {
  Value input = operand->eval(in);
  CallArgs a = eval_args(in, args, line);
  return Value::boolean(fn(in, input, a) != negated);
}

Value BlockInput::eval_node(Interpreter& in) const { return in.block_input; }

Value UnaryExpr::eval_node(Interpreter& in) const {
  Value v = operand->eval(in);
  if (op == '!') return Value::boolean(!truthy(v));
  if (v.is_undefined()) fail_undefined(v, line);
  if (v.is_float()) return Value::number(op == '-' ? -v.as<double>() : v.as<double>());
  if (v.is_int() || v.is_bool()) {
    const std::int64_t x = as_int(v, "unary", line);
    if (op == '+') return Value::integer(x);
    if (x == std::numeric_limits<std::int64_t>::min()) fail_render(line, "integer overflow in '-'");
    return Value::integer(-x);
  }
  fail_render(line, std::string("bad operand type for unary ") + op + ": '" + type_name(v) + "'");
}

Value BinaryExpr::eval_node(Interpreter& in) const {
  Value a = left->eval(in);
  Value b = right->eval(in);
  if (op == "~") {
    std::string left = to_str(a);
    const std::string right = to_str(b);
    check_text_size(left.size() + right.size(), line, "'~'");
    return Value::string(left + right);
  }
  return arithmetic(op, a, b, line);
}

Value LogicalExpr::eval_node(Interpreter& in) const {
  // Python returns the deciding operand, not a bool.
  Value a = left->eval(in);
  if (is_and ? !truthy(a) : truthy(a)) return a;
  return right->eval(in);
}

Value CompareExpr::eval_node(Interpreter& in) const {
  Value a = first->eval(in);
  for (const auto& [op, e] : rest) {
    Value b = e->eval(in);
    if (!compare(op, a, b, e->line)) return Value::boolean(false);
    a = std::move(b);
  }
  return Value::boolean(true);
}

Value CondExpr::eval_node(Interpreter& in) const {
  if (truthy(cond->eval(in))) return then->eval(in);
  if (otherwise) return otherwise->eval(in);
  return Value::undefined("the inline if-expression on line " + std::to_string(line) +
                          " evaluated to false and no else section was defined");
}

// ---- statements ----

Flow TextStmt::exec(Interpreter& in) const {
  in.write(text, line);
  return Flow::Normal;
}

Flow OutputStmt::exec(Interpreter& in) const {
  const Value v = expr->eval(in);
  in.write(to_str(v), line);
  return Flow::Normal;
}

Flow IfStmt::exec(Interpreter& in) const {
  for (const auto& [cond, body] : branches) {
    if (truthy(cond->eval(in))) return in.exec(body);
  }
  return in.exec(otherwise);
}

Flow ForStmt::exec(Interpreter& in) const {
  ListPtr items = iterate(iter->eval(in), iter->line);
  if (filter) {
    List kept;
    for (const auto& item : *items) {
      in.charge(1, line);
      ScopeGuard scope(in, in.frame);
      assign(in, target, item, line);
      if (truthy(filter->eval(in))) kept.push_back(item);
    }
    items = std::make_shared<const List>(std::move(kept));
  }
  if (items->empty()) return in.exec(otherwise);
  const std::size_t n = items->size();
  for (std::size_t i = 0; i < n; ++i) {
    in.charge(1, line);
    // A fresh scope per iteration: jinja2 does not carry {% set %} from one iteration to the next.
    ScopeGuard scope(in, in.frame);
    assign(in, target, (*items)[i], line);
    Dict loop;
    const auto index0 = static_cast<std::int64_t>(i);
    const auto length = static_cast<std::int64_t>(n);
    loop.entries.reserve(12);
    loop.entries.emplace_back("index0", Value::integer(index0));
    loop.entries.emplace_back("index", Value::integer(index0 + 1));
    loop.entries.emplace_back("revindex0", Value::integer(length - index0 - 1));
    loop.entries.emplace_back("revindex", Value::integer(length - index0));
    loop.entries.emplace_back("first", Value::boolean(i == 0));
    loop.entries.emplace_back("last", Value::boolean(i + 1 == n));
    loop.entries.emplace_back("length", Value::integer(length));
    loop.entries.emplace_back("depth", Value::integer(1));
    loop.entries.emplace_back("depth0", Value::integer(0));
    if (i > 0) loop.entries.emplace_back("previtem", (*items)[i - 1]);
    if (i + 1 < n) loop.entries.emplace_back("nextitem", (*items)[i + 1]);
    loop.entries.emplace_back("cycle", Value::function(std::make_shared<const Function>(Function{
                                           "cycle", [i](Interpreter&, CallArgs& args) {
                                             if (args.positional.empty())
                                               fail_render(args.line, "loop.cycle() needs at least one argument");
                                             return args.positional[i % args.positional.size()];
                                           }})));
    scope.frame().set("loop", Value::dict(std::move(loop)));
    const Flow flow = in.exec(body);
    if (flow == Flow::Break) break;
  }
  return Flow::Normal;
}

Flow SetStmt::exec(Interpreter& in) const {
  assign(in, target, value->eval(in), line);
  return Flow::Normal;
}

Flow SetBlockStmt::exec(Interpreter& in) const {
  Flow flow;
  std::string captured;
  {
    CaptureGuard capture(in);
    flow = in.exec(body);
    captured = capture.take();
  }
  Value value = Value::string(std::move(captured));
  if (filters) {
    Value saved = std::move(in.block_input);
    in.block_input = std::move(value);
    value = filters->eval(in);
    in.block_input = std::move(saved);
  }
  assign(in, target, std::move(value), line);
  return flow;
}

Flow MacroStmt::exec(Interpreter& in) const {
  const MacroStmt* self = this;
  in.frame->set(name, Value::function(std::make_shared<const Function>(
                          Function{name, [self](Interpreter& i, CallArgs& args) { return self->invoke(i, args); }})));
  return Flow::Normal;
}

Value MacroStmt::invoke(Interpreter& in, CallArgs& args) const {
  if (in.macro_depth >= kMaxMacroDepth) {
    fail_render(args.line, "macro '" + name + "' recursed deeper than " + std::to_string(kMaxMacroDepth));
  }
  if (args.positional.size() > params.size()) {
    fail_render(args.line, "macro '" + name + "' takes " + std::to_string(params.size()) + " argument(s), " +
                               std::to_string(args.positional.size()) + " given");
  }
  for (const auto& [key, value] : args.keyword) {
    const bool known = std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == key; });
    if (!known) fail_render(args.line, "macro '" + name + "' got an unexpected keyword argument '" + key + "'");
  }
  // Macros see the template's globals, not the caller's locals.
  ScopeGuard scope(in, &in.globals);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [param, def] = params[i];
    std::optional<Value> value;
    if (i < args.positional.size()) value = args.positional[i];
    for (const auto& [key, v] : args.keyword) {
      if (key == param) {
        if (value) fail_render(args.line, "macro '" + name + "' got multiple values for '" + param + "'");
        value = v;
      }
    }
    if (!value) {
      value =
          def ? def->eval(in) : Value::undefined("parameter '" + param + "' of macro '" + name + "' was not provided");
    }
    scope.frame().set(param, std::move(*value));
  }
  CaptureGuard capture(in);
  ++in.macro_depth;
  try {
    in.exec(body);
  } catch (...) {
    --in.macro_depth;
    throw;
  }
  --in.macro_depth;
  return Value::string(capture.take());
}

Flow FilterBlockStmt::exec(Interpreter& in) const {
  Flow flow;
  std::string captured;
  {
    CaptureGuard capture(in);
    flow = in.exec(body);
    captured = capture.take();
  }
  Value saved = std::move(in.block_input);
  in.block_input = Value::string(std::move(captured));
  const Value result = filters->eval(in);
  in.block_input = std::move(saved);
  append_str(*in.out, result, false, 0);
  return flow;
}

Flow WithStmt::exec(Interpreter& in) const {
  ScopeGuard scope(in, in.frame);
  for (const auto& [name, e] : assignments) scope.frame().set(name, e->eval(in));
  return in.exec(body);
}

Flow PlainBlockStmt::exec(Interpreter& in) const { return in.exec(body); }

}  // namespace opchain::jinja::detail
