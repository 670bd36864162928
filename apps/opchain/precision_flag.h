#pragma once
// --precision, shared by every command that builds a model (Note [Matmul precision]).
#include <CLI/CLI.hpp>
#include <string>

#include "engine/loaded_model.h"

namespace opchain::cli {

inline void add_precision_flag(CLI::App* cmd, std::string& value) {
  cmd->add_option("--precision", value,
                  "matmul activations: f32 (the reference numerics; quantised weights dequantised exactly), bf16 "
                  "(rounded to bf16 before bf16 or quantised weights, as a bf16 run computes), quantized (what a "
                  "quantised checkpoint's format names: int8 or fp8 activations, else bf16), auto (quantized for a "
                  "quantised checkpoint, bf16 for a bf16 one, else f32)")
      ->check(CLI::IsMember({"auto", "f32", "bf16", "quantized"}))
      ->capture_default_str();
}

// Checked by add_precision_flag's validator, so only its four names arrive here.
inline PrecisionChoice precision_choice(const std::string& value) {
  return parse_precision_choice(value).value_or(PrecisionChoice::Auto);
}

}  // namespace opchain::cli
