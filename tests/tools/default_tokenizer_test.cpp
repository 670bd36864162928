#include "tools/default_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace opchain::tools {
namespace {

// The test binary lives under the checkout's build directory, so the search finds the repository's
// tokenizer whatever the working directory.
TEST(DefaultTokenizer, FoundFromTheExecutable) {
  const std::string dir = find_default_tokenizer_dir();
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::path(dir) / "tokenizer.json")) << dir;
  EXPECT_NE(dir.find(kDefaultTokenizerSubdir), std::string::npos) << dir;
}

}  // namespace
}  // namespace opchain::tools
