// `opchain align` end to end on golden models: cpu against reference and graph against eager agree
// op call by op call at the default tolerance, and a zero tolerance stops at the first op that
// differs, printing its five-layer chain and its inputs' statistics.
#include <gtest/gtest.h>

#include "apps/cli_run.h"

namespace opchain {
namespace {

using test::run_opchain;

const std::string kIds = " --ids 11,42,7,300,5,91,23,64,8,200";

TEST(AlignCommand, CpuAgainstReferencePassesAtDefaultTolerance) {
  const auto r = run_opchain("align --model " + test::model_dir("tiny-qwen3-moe") + kIds +
                             " --decode-steps 3 --compare cpu:reference");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("within tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fused_moe"), std::string::npos) << r.out;  // a row per op call
  EXPECT_NE(r.out.find("model.layers.1.mlp.experts"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("first op over tolerance"), std::string::npos) << r.out;
}

TEST(AlignCommand, GraphAgainstEagerPasses) {
  const auto r = run_opchain("align --model " + test::model_dir("tiny-qwen2-moe") + kIds +
                             " --decode-steps 6 --block-size 4 --compare graph:eager");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("within tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("paged_decode_attention"), std::string::npos) << r.out;  // decode steps were compared
}

TEST(AlignCommand, ZeroToleranceStopsAtTheFirstDifferingOpWithItsChain) {
  const auto r = run_opchain("align --model " + test::model_dir("tiny-llama") + kIds +
                             " --decode-steps 2 --compare cpu:reference --tol 0");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("first op over tolerance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("five-layer chain"), std::string::npos) << r.out;
  // The chain names every layer: module path -> nn module -> OpType -> impl -> key -> vendor kernel.
  EXPECT_NE(r.out.find("reference: model."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu: model."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> cpu:cpu::"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> reference:reference::"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inputs before the call"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("absmax"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("within tolerance"), std::string::npos) << r.out;
}

TEST(AlignCommand, BadCompareIsOneLine) {
  const auto r = run_opchain("align --model " + test::model_dir("tiny-llama") + kIds + " --compare eager:graph");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("graph:eager"), std::string::npos) << r.err;
  const auto vendor = run_opchain("align --model " + test::model_dir("tiny-llama") + kIds + " --compare cpu:nosuch");
  EXPECT_EQ(vendor.exit_code, 1);
  EXPECT_NE(vendor.err.find("nosuch"), std::string::npos) << vendor.err;
}

}  // namespace
}  // namespace opchain
