// `opchain quantize` and `make-model --quantize` from the command line: the written model loads and
// runs, and bad requests are one-line errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/cli_run.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

class CliQuantize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opchain-cliq-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliQuantize, WritesAModelThatGenerates) {
  const std::string out = (dir_ / "q").string();
  auto r = test::run_opchain("quantize --model " + test::model_dir("tiny-qwen3-moe") + " --out " + out +
                             " --format w4a16 --group-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("56 linear layers as w4a16, 3 left dense"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(fs::path(out) / "tokenizer.json"));
  r = test::run_opchain("generate --model " + out +
                        " --prompt-ids 1,2,3 --max-new-tokens 4 --temperature 0 --ignore-eos");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("compressed-tensors pack-quantized weights"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("quantized matmuls"), std::string::npos) << r.err;
  // A quantised model is not quantised again.
  r = test::run_opchain("quantize --model " + out + " --out " + (dir_ / "qq").string() + " --format gptq");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("already quantised (compressed-tensors)"), std::string::npos) << r.err;
}

// trained-qwen3-moe ties its output projection to the embedding: asked for --lm-head, quantize writes a
// quantised lm_head of its own and unties the config; not asked, the model stays tied.
TEST_F(CliQuantize, TiedOutputProjectionGetsAQuantisedCopy) {
  const std::string model = test::model_dir("trained-qwen3-moe");
  const std::string tied = (dir_ / "tied").string(), untied = (dir_ / "untied").string();
  auto r = test::run_opchain("quantize --model " + model + " --out " + tied + " --format gptq --group-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("112 linear layers as gptq"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tied embedding"), std::string::npos) << r.err;
  r = test::run_opchain("quantize --model " + model + " --out " + untied + " --format gptq --group-size 32 --lm-head");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("113 linear layers as gptq, 4 left dense, lm_head quantised from the tied embedding "
                       "(config untied)"),
            std::string::npos)
      << r.err;
  auto config = [](const std::string& dir) {
    std::ifstream in(dir + "/config.json");
    return nlohmann::json::parse(in);
  };
  EXPECT_TRUE(config(tied).at("tie_word_embeddings").get<bool>());
  EXPECT_FALSE(config(untied).at("tie_word_embeddings").get<bool>());
  EXPECT_TRUE(config(untied).at("quantization_config").at("lm_head").get<bool>());
  r = test::run_opchain("generate --model " + untied +
                        " --prompt-ids 1,2,3 --max-new-tokens 4 --temperature 0 --ignore-eos");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliQuantize, BadRequestsAreOneLineErrors) {
  const std::string model = test::model_dir("tiny-qwen3-moe");
  auto r = test::run_opchain("quantize --model " + model + " --out " + model + " --format gptq");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--out must differ from --model"), std::string::npos) << r.err;
  r = test::run_opchain("quantize --model " + model + " --out " + (dir_ / "x").string() +
                        " --format fp8-block --block 128");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--block must be ROWS,COLS"), std::string::npos) << r.err;
  r = test::run_opchain("quantize --model " + model + " --out " + (dir_ / "x").string() + " --format int3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--format: int3 not in"), std::string::npos) << r.err;
  r = test::run_opchain("quantize --model " + model + " --out " + (dir_ / "x").string() + " --format awq --act-order");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--act-order applies to gptq and w4a16 only"), std::string::npos) << r.err;
  r = test::run_opchain("quantize --model " + model + " --out " + (dir_ / "x").string() +
                        " --format gptq --group-size 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--group-size must be positive or -1"), std::string::npos) << r.err;
}

TEST_F(CliQuantize, MakeModelWritesAPresetStraightIntoAFormat) {
  const std::string q = (dir_ / "q").string(), d = (dir_ / "d").string(), dq = (dir_ / "dq").string();
  const std::string preset = " --preset tiny-qwen3.5-moe --seed 3 --layers 2";
  auto r = test::run_opchain("make-model" + preset + " --out " + q + " --quantize gptq --group-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_opchain("make-model" + preset + " --out " + d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_opchain("quantize --model " + d + " --out " + dq + " --format gptq --group-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(q + "/model.safetensors"), bytes(dq + "/model.safetensors"));  // the same weights either way
  r = test::run_opchain("generate --model " + q +
                        " --prompt-ids 1,2,3 --max-new-tokens 4 --temperature 0 --ignore-eos");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace opchain
