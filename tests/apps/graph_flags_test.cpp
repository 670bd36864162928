// --graph (the default) and --eager on the engine commands: the same greedy generation either way,
// and the two flags exclude each other.
#include <gtest/gtest.h>

#include "apps/cli_run.h"

namespace opchain {
namespace {

using test::run_opchain;

TEST(GraphFlags, GenerateGivesTheSameTokensGraphAndEager) {
  const std::string base = "generate --model " + test::model_dir("tiny-qwen3-moe") +
                           " --prompt-ids 3,14,15,92,65 --max-new-tokens 24 --temperature 0 --ignore-eos --json"
                           " --block-size 4 --max-batch 4";
  const auto graph = run_opchain(base + " --graph");
  const auto eager = run_opchain(base + " --eager");
  const auto by_default = run_opchain(base);
  ASSERT_EQ(graph.exit_code, 0) << graph.err;
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_NE(graph.out.find("\"completion_tokens\":24"), std::string::npos) << graph.out;
  EXPECT_EQ(graph.out, eager.out);
  EXPECT_EQ(by_default.out, graph.out);
}

TEST(GraphFlags, GraphAndEagerExcludeEachOther) {
  const auto r =
      run_opchain("generate --model " + test::model_dir("tiny-qwen3-moe") + " --prompt-ids 1,2 --graph --eager");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--eager"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace opchain
