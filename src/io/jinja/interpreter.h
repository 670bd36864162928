#pragma once
// The render's state: variable scopes, where output goes, and the depth and work counted against
// Note [Template limits]. Expressions and statements (ast.h) run against it.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/jinja/ast.h"
#include "io/jinja/errors.h"
#include "io/jinja/globals.h"
#include "io/jinja/limits.h"
#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// A variable scope. Jinja2 gives each for-loop iteration, macro call and {% with %} a fresh one;
// {% if %} does not create one. Lookups fall through to the parent.
struct Frame {
  Frame* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(std::string_view name) const {
    for (const auto& [k, v] : vars) {
      if (k == name) return &v;
    }
    return nullptr;
  }
  void set(const std::string& name, Value value) {
    for (auto& entry : vars) {
      if (entry.first == name) {
        entry.second = std::move(value);
        return;
      }
    }
    vars.emplace_back(name, std::move(value));
  }
};

class Interpreter {
 public:
  explicit Interpreter(std::string* out) : out(out) {}

  Value lookup(const std::string& name) const {
    for (const Frame* f = frame; f != nullptr; f = f->parent) {
      if (const Value* v = f->find(name)) return *v;
    }
    if (FunctionPtr fn = find_global(name)) return Value::function(std::move(fn));
    return Value::undefined("'" + name + "' is undefined");
  }

  // One level of the render's recursion (an expression or a block) and one step of its work;
  // see Note [Template limits].
  class Level {
   public:
    Level(Interpreter& in, int line) : in_(in) {
      if (++in_.depth > kMaxNesting) {
        fail_render(line, "rendering recursed deeper than " + std::to_string(kMaxNesting) +
                              " levels (nested blocks, expressions and macro calls)");
      }
      in_.charge(1, line);
    }
    ~Level() { --in_.depth; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    Interpreter& in_;
  };

  void charge(std::int64_t steps, int line) {
    work += steps;
    if (work > kMaxRenderSteps) {
      fail_render(line,
                  "rendering took more than " + std::to_string(kMaxRenderSteps) + " steps (the template's work limit)");
    }
  }

  // Appends rendered text, within kMaxTextBytes.
  void write(std::string_view text, int line) {
    check_text_size(out->size() + text.size(), line, "the rendered text");
    out->append(text);
  }

  Flow exec(const Body& body) {
    if (body.empty()) return Flow::Normal;
    Level level(*this, body.front()->line);
    for (const auto& stmt : body) {
      const Flow flow = stmt->exec(*this);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  Frame globals;  // the render context plus top-level {% set %}s
  Frame* frame = &globals;
  std::string* out;   // where output goes; swapped while capturing macro/set/filter bodies
  Value block_input;  // see BlockInput
  int macro_depth = 0;
  int depth = 0;          // eval/exec recursion, see Level
  std::int64_t work = 0;  // steps so far, see charge()
};

// Pushes a scope for the lifetime of the object; restores the previous one even on throw.
class ScopeGuard {
 public:
  ScopeGuard(Interpreter& in, Frame* parent) : in_(in), saved_(in.frame) {
    frame_.parent = parent;
    in_.frame = &frame_;
  }
  ~ScopeGuard() { in_.frame = saved_; }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  Frame& frame() { return frame_; }

 private:
  Interpreter& in_;
  Frame frame_;
  Frame* saved_;
};

// Redirects output into a buffer for the lifetime of the object.
class CaptureGuard {
 public:
  explicit CaptureGuard(Interpreter& in) : in_(in), saved_(in.out) { in_.out = &buffer_; }
  ~CaptureGuard() { in_.out = saved_; }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
  std::string take() { return std::move(buffer_); }

 private:
  Interpreter& in_;
  std::string buffer_;
  std::string* saved_;
};

}  // namespace opchain::jinja::detail
