#pragma once
// The bounds on parsing and rendering; see Note [Template limits].
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/jinja/errors.h"

namespace opchain::jinja::detail {

// Note [Template limits]: a template and its data come from outside (a model's tokenizer_config.json,
// a request's messages), so parsing and rendering are bounded, each limit failing with an error that
// names it (docs/reliability.md lists them):
//   * kMaxNesting bounds every recursion: nested values, the parser's recursion, the height of an
//     expression tree (operator, filter and attribute chains are left-deep trees built by loops, so
//     they count), block nesting, and the render's eval/exec depth including macro calls. Each level
//     is a few native frames; 512 of them fit the 8 MiB stacks of the CLI and the server's threads.
//   * kMaxTextBytes bounds the output and every string a template builds (+, ~, *, join, replace).
//   * kMaxSequenceItems bounds lists built by + and *, kMaxFormatWidth printf-style widths.
//   * kMaxRenderSteps bounds the work of one render: one step per expression evaluated, statement
//     run and loop iteration, and one per item (or 64 bytes) a filter or method walks over.
constexpr int kMaxNesting = 512;
constexpr int kMaxMacroDepth = 100;
constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxSequenceItems = std::size_t{1} << 20;
constexpr int kMaxFormatWidth = 4096;
constexpr std::int64_t kMaxRenderSteps = 5'000'000;

// Fails when a string being built would pass kMaxTextBytes (see Note [Template limits]).
inline void check_text_size(std::size_t bytes, int line, const char* what) {
  if (bytes > kMaxTextBytes) {
    throw InvalidArgumentError(at_line(line) + what + " would be " + std::to_string(bytes) +
                               " bytes, over the template limit of " + std::to_string(kMaxTextBytes));
  }
}

}  // namespace opchain::jinja::detail
