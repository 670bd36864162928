// Jinja2 engine: lexer -> recursive-descent parser -> AST -> tree-walking interpreter.
// Semantics follow Python Jinja2 3.x with the default Undefined and no autoescaping, which is what
// transformers' apply_chat_template uses. See jinja.h for the error contract.
//
// This file is the public Template API; the engine lives in io/jinja/, in namespace
// opchain::jinja::detail (other parts of opchain may well define their own Token/Value/Parser
// types), one file per piece:
//   lexer      source -> tokens (whitespace control, raw blocks)
//   parser     tokens -> AST (ast.h), rejecting unsupported constructs at load time
//   value      Python objects and their ==, <, truthiness; repr: str()/repr(); json_dumps: tojson
//   evaluator  how each AST node runs against the Interpreter (interpreter.h)
//   access, operators, format, python_string: the Python semantics the nodes and builtins share
//   filters, tests, methods, globals: the builtins, each with its own table
//   limits     Note [Template limits]
#include "io/jinja.h"

#include <memory>
#include <new>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/jinja/interpreter.h"
#include "io/jinja/lexer.h"
#include "io/jinja/parser.h"
#include "io/jinja/value.h"

namespace opchain::jinja {

struct Template::Program {
  detail::Body body;
};

namespace {

using namespace detail;

template <class Json>
std::string render_program(const Template::Program& program, const Json& context) {
  if (!context.is_object() && !context.is_null()) {
    throw InvalidArgumentError("template context must be a JSON object, got " + std::string(context.type_name()));
  }
  std::string out;
  Interpreter in(&out);
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) {
      in.globals.vars.emplace_back(it.key(), from_json(it.value(), 0));
    }
  }
  in.exec(program.body);
  return out;
}

}  // namespace

// ============================================================================================
// Public API.
// ============================================================================================

Template::Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

Template Template::parse(std::string source, Options options) {
  // Like jinja2: \r\n and \r become \n, and one trailing newline is dropped by default.
  std::string src;
  src.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!options.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
  auto program = std::make_shared<Program>();
  program->body = detail::parse(detail::lex(src, options));
  return Template(std::move(program));
}

// Rendering fails with InvalidArgumentError or FormatError only (see jinja.h): anything else that
// escaped would reach the CLI as "internal error" and the server as a 500.
template <class Json>
std::string render_guarded(const Template::Program& program, const Json& context) {
  try {
    return render_program(program, context);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw InvalidArgumentError("rendering the template needs more memory than is available");
  } catch (const std::exception& e) {
    throw InvalidArgumentError(std::string("rendering the template failed: ") + e.what());
  }
}

std::string Template::render(const nlohmann::json& context) const { return render_guarded(*program_, context); }

std::string Template::render(const nlohmann::ordered_json& context) const { return render_guarded(*program_, context); }

}  // namespace opchain::jinja
