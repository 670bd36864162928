// `opchain make-model` end to end: the directory it writes loads and runs through `opchain logits`,
// carries the repository's Qwen3 tokenizer, shards on request, and every bad input is one clear line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "apps/cli_run.h"
#include "io/npy.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;
using test::run_opchain;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("opchain-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(MakeModelCommand, WritesALoadableShardedModelWithTokenizer) {
  TempDir dir("mm-cli");
  // The default tokenizer directory is found from the executable's location in the checkout.
  auto r = run_opchain("make-model --preset tiny-moe --layers 1 --dtype bf16 --seed 3 --shard-size-mb 64 --out " +
                       dir.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote"), std::string::npos) << r.err;
  for (const char* f :
       {"config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json",
        "tokenizer_config.json", "model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors"})
    EXPECT_TRUE(fs::exists(dir.path / f)) << f;
  EXPECT_EQ(fs::file_size(dir.path / "tokenizer.json"),
            fs::file_size(fs::path(test::data_dir()) / "tokenizer/qwen3/tokenizer.json"));

  const std::string npy = (dir.path / "logits.npy").string();
  r = run_opchain("logits --model " + dir.path.string() + " --ids 151643,9707,11,1879,0,151935 --out " + npy);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NpyArray logits = read_npy_f32(npy);
  ASSERT_EQ(logits.shape.size(), 2u);
  EXPECT_EQ(logits.shape[0], 6);
  EXPECT_EQ(logits.shape[1], 151936);
  EXPECT_TRUE(std::all_of(logits.data.begin(), logits.data.end(), [](float v) { return std::isfinite(v); }));
}

void expect_one_line_error(const test::CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(MakeModelCommand, BadInputIsOneClearLine) {
  TempDir dir("mm-cli-bad");
  const std::string out = " --out " + dir.path.string();
  expect_one_line_error(run_opchain("make-model --preset qwen9-moe" + out), "unknown preset 'qwen9-moe'");
  expect_one_line_error(run_opchain("make-model --preset tiny-moe --dtype f16" + out), "--dtype");
  expect_one_line_error(run_opchain("make-model --preset tiny-moe --layers 0" + out), "--layers");
  expect_one_line_error(run_opchain("make-model --preset tiny-moe --layers 1 --out /proc/opchain-no/model"),
                        "/proc/opchain-no/model");
  expect_one_line_error(run_opchain("make-model --preset tiny-moe --layers 1 --tokenizer-dir /nonexistent" + out),
                        "/nonexistent");
  EXPECT_FALSE(fs::exists(dir.path / "model.safetensors"));
}

}  // namespace
}  // namespace opchain
