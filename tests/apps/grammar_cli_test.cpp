// Structured output from the command line: `generate --json-schema` / `--json-object` print JSON,
// a bad schema is one line naming keyword and pointer, and `bench --json-schema --json` reports the
// per-token mask cost.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/cli_run.h"

namespace opchain {
namespace {

using nlohmann::json;
using test::run_opchain;

std::string write_schema(const std::string& name, const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / ("opchain-grammar-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(GrammarCli, GenerateJsonSchemaAndJsonObject) {
  const std::string schema =
      write_schema("s.json", R"({"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]})");
  auto r = run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") +
                       " --prompt cat --temperature 1 --seed 4 --json --json-schema " + schema);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out.at("finish_reason"), "stop");
  const json value = json::parse(out.at("text").get<std::string>());
  EXPECT_TRUE(value.at("k") == "a" || value.at("k") == "b") << value;

  r = run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") +
                  " --prompt cat --temperature 0 --max-new-tokens 8 --json --json-object");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("text").get<std::string>().rfind('{', 0), 0u) << r.out;
  std::filesystem::remove(schema);
}

TEST(GrammarCli, BadSchemaIsOneLine) {
  const std::string schema = write_schema("bad.json", R"({"type":"array","items":{"allOf":[{}]}})");
  const auto r =
      run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") + " --prompt x --json-schema " + schema);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unsupported keyword 'allOf' at /items/allOf"), std::string::npos) << r.err;
  std::filesystem::remove(schema);
}

TEST(GrammarCli, BenchReportsMaskCostPerToken) {
  const std::string schema = write_schema("b.json", R"({"type":"array","items":{"type":"integer"},"maxItems":3})");
  const auto r = run_opchain("bench --model " + test::model_dir("trained-qwen3-moe") + " --json-schema " + schema +
                             " --reps 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_GT(j.at("tokens").get<int64_t>(), 0);
  EXPECT_GE(j.at("mask_ms_per_token").at("mean").get<double>(), 0.0);
  EXPECT_GT(j.at("automaton_states").get<int64_t>(), 0);
  std::filesystem::remove(schema);
}

}  // namespace
}  // namespace opchain
