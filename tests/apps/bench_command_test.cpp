// `opchain bench --json` end to end on a golden model, with tiny sizes: one JSON object with every
// figure present, positive and internally consistent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/cli_run.h"

namespace opchain {
namespace {

using nlohmann::json;
using test::run_opchain;

void expect_stats(const json& s, const std::string& what) {
  ASSERT_TRUE(s.is_object()) << what;
  const double med = s.at("median"), lo = s.at("min"), hi = s.at("max");
  EXPECT_GT(lo, 0) << what;
  EXPECT_LE(lo, med) << what;
  EXPECT_LE(med, hi) << what;
}

TEST(BenchCommand, JsonReportOnGoldenModel) {
  const auto r = run_opchain("bench --model " + test::model_dir("tiny-qwen3-moe") +
                             " --threads 2 --prompt-lens 8,16 --gen 3 --batches 1,4 --depth 5 --reps 2"
                             " --bandwidth-mib 32 --graph --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j;
  ASSERT_NO_THROW(j = json::parse(r.out)) << r.out;  // exactly one object, nothing else on stdout
  EXPECT_EQ(j.at("mode"), "graph");
  EXPECT_EQ(j.at("threads"), 2);
  EXPECT_EQ(j.at("model"), test::model_dir("tiny-qwen3-moe"));
  EXPECT_GE(j.at("load_s").get<double>(), 0);
  EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), 0);
  EXPECT_GT(j.at("bandwidth_gbs").get<double>(), 0);

  ASSERT_EQ(j.at("prefill").size(), 2u);
  EXPECT_EQ(j["prefill"][0].at("prompt_len"), 8);
  EXPECT_EQ(j["prefill"][1].at("prompt_len"), 16);
  for (const auto& p : j["prefill"]) expect_stats(p.at("tok_s"), "prefill");

  ASSERT_EQ(j.at("decode").size(), 2u);
  EXPECT_EQ(j["decode"][0].at("batch"), 1);
  EXPECT_EQ(j["decode"][1].at("batch"), 4);
  for (const auto& d : j["decode"]) {
    expect_stats(d.at("tok_s"), "decode tok/s");
    expect_stats(d.at("ms_per_step"), "decode ms/step");
    const double share = d.at("bandwidth_share");
    EXPECT_GT(share, 0);
    // tok/s and ms/step describe the same runs: batch tokens per step.
    const double batch = d["batch"], tok_s = d["tok_s"]["median"], ms = d["ms_per_step"]["median"];
    EXPECT_NEAR(tok_s * ms / 1000.0 / batch, 1.0, 0.25);
  }
  // A bigger batch touches more distinct experts, so a step reads more weight bytes.
  EXPECT_GT(j["decode"][1]["weight_bytes_per_step"].get<double>(),
            j["decode"][0]["weight_bytes_per_step"].get<double>());
}

// A depth past one fill chunk (2048 tokens) fills each sequence's cache in steps that continue where the
// last one ended, the final one partial; the decode after it runs at the full depth.
TEST(BenchCommand, FillsADeepCacheInChunks) {
  const auto r = run_opchain("bench --model " + test::model_dir("tiny-qwen3-moe") +
                             " --threads 2 --prompt-lens 8 --gen 2 --batches 1,2 --depth 2500 --reps 1"
                             " --bandwidth-mib 16 --graph --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j;
  ASSERT_NO_THROW(j = json::parse(r.out)) << r.out;
  EXPECT_EQ(j.at("depth"), 2500);
  ASSERT_EQ(j.at("decode").size(), 2u);
  for (const auto& d : j["decode"]) expect_stats(d.at("tok_s"), "decode tok/s at depth 2500");
}

// Without --graph or --eager both decode modes run; each reports its kernel and host time per step,
// and graph replay leaves less host time than eager.
TEST(BenchCommand, ComparesEagerAndGraphDecodeHostTime) {
  const auto r =
      run_opchain("bench --model " + test::model_dir("tiny-qwen3-moe") +
                  " --threads 1 --prompt-lens 8 --gen 12 --batches 1,3 --depth 5 --reps 3 --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j;
  ASSERT_NO_THROW(j = json::parse(r.out)) << r.out;
  EXPECT_EQ(j.at("mode"), "eager+graph");
  ASSERT_EQ(j.at("decode").size(), 2u);
  for (const auto& d : j["decode"]) {
    EXPECT_EQ(d.at("mode"), "graph");
    for (const char* mode : {"eager", "graph"}) {
      const json& m = d.at(mode);
      expect_stats(m.at("ms_per_step"), mode);
      const double kernel = m.at("kernel_ms_per_step"), host = m.at("host_ms_per_step");
      EXPECT_GT(kernel, 0) << mode;
      EXPECT_GE(host, 0) << mode;
      EXPECT_LE(kernel, m["ms_per_step"]["max"].get<double>() * 1.5) << mode;
    }
    EXPECT_LT(d["graph"]["host_ms_per_step"].get<double>(), d["eager"]["host_ms_per_step"].get<double>());
    EXPECT_TRUE(d.contains("host_time_removed"));
  }
}

TEST(BenchCommand, BadArgumentsAreOneLine) {
  const auto r = run_opchain("bench --model " + test::model_dir("tiny-qwen3-moe") + " --batches 0 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--batches"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const auto missing = run_opchain("bench --model /nonexistent-model --json");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent-model"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace opchain
