#pragma once
// --precision, shared by every command that builds a model (Note [Matmul precision]).
#include <CLI/CLI.hpp>
#include <string>

#include "engine/loaded_model.h"

namespace opchain::cli {

inline void add_precision_flag(CLI::App* cmd, std::string& value) {
  cmd->add_option("--precision", value,
                  "matmul activations: f32 (the reference numerics), bf16 (rounded to bf16 before bf16 weights, "
                  "as a bf16 run computes; the fast path), auto (bf16 for a bf16 checkpoint, else f32)")
      ->check(CLI::IsMember({"auto", "f32", "bf16"}))
      ->capture_default_str();
}

// Checked by add_precision_flag's validator, so only the three names arrive here.
inline PrecisionChoice precision_choice(const std::string& value) {
  return parse_precision_choice(value).value_or(PrecisionChoice::Auto);
}

}  // namespace opchain::cli
