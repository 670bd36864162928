// tools/token_ids.h as logits, align, trace and generate --prompt-ids read ids, without the CLI.
#include "tools/token_ids.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace opchain::tools {
namespace {

TEST(TokenIds, SplitOnCommasWhitespaceAndBrackets) {
  EXPECT_EQ(parse_token_ids("1,2, 3"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_token_ids("[4,\n5]\t6"), (std::vector<int32_t>{4, 5, 6}));
}

TEST(TokenIds, TheFileWinsOverTheText) {
  const auto path = std::filesystem::temp_directory_path() / "opchain-token-ids-test.txt";
  std::ofstream(path) << "7 8\n9\n";
  EXPECT_EQ(parse_token_ids("1,2", path.string()), (std::vector<int32_t>{7, 8, 9}));
  std::filesystem::remove(path);
  EXPECT_THROW(parse_token_ids("", path.string()), InvalidArgumentError);  // gone: cannot read
}

TEST(TokenIds, BadOrNoIdsThrow) {
  EXPECT_THROW(parse_token_ids(""), InvalidArgumentError);
  EXPECT_THROW(parse_token_ids(" , "), InvalidArgumentError);
  EXPECT_THROW(parse_token_ids("1,x"), InvalidArgumentError);
  EXPECT_THROW(parse_token_ids("-1"), InvalidArgumentError);
  EXPECT_THROW(parse_token_ids("2147483648"), InvalidArgumentError);
  EXPECT_EQ(parse_token_ids("2147483647"), (std::vector<int32_t>{2147483647}));
}

}  // namespace
}  // namespace opchain::tools
