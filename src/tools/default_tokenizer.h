#pragma once
// The tokenizer `opchain make-model` puts beside random weights when none is given: the
// repository's Qwen3 tokenizer.
#include <string>

namespace opchain::tools {

// Relative to the checkout's root.
inline constexpr const char* kDefaultTokenizerSubdir = "tests/data/tokenizer/qwen3";

// The repository's Qwen3 tokenizer, found from the working directory or from the executable (which
// lives somewhere under a build directory of the checkout), nearest first.
// Throws InvalidArgumentError when neither finds it.
std::string find_default_tokenizer_dir();

}  // namespace opchain::tools
