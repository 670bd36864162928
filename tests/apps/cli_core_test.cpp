// The core CLI commands as a user runs them: logits, ops, trace; and bad input gives one clear line
// and a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/cli_run.h"
#include "io/npy.h"
#include "vendors/cpu/cpu_kernels.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

TEST(CliLogits, WritesNpyEqualToReference) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto out = fs::temp_directory_path() / ("opchain-logits-" + std::to_string(::getpid()) + ".npy");
  const auto r = test::run_opchain("logits --model " + dir + " --ids-file " + dir + "/ids.txt --precision f32 --out " +
                                   out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NpyArray got = read_npy_f32(out.string()), ref = read_npy_f32(dir + "/ref_logits.npy");
  ASSERT_EQ(got.shape, ref.shape);
  float worst = 0;
  for (size_t i = 0; i < got.data.size(); ++i) worst = std::max(worst, std::fabs(got.data[i] - ref.data[i]));
  EXPECT_LE(worst, 1e-3f);
  fs::remove(out);
}

// OPCHAIN_CPU_ISA as a user sets it: every tier this CPU has gives the reference logits end to end; a tier
// it lacks, or a name that is no tier, is said on stderr and the run goes on with the best tier.
TEST(CliLogits, EachCpuTierFromTheEnvironment) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto out = fs::temp_directory_path() / ("opchain-logits-isa-" + std::to_string(::getpid()) + ".npy");
  const NpyArray ref = read_npy_f32(dir + "/ref_logits.npy");
  struct EnvGuard {  // puts back what the test process was started with
    const char* was = std::getenv("OPCHAIN_CPU_ISA");
    std::string saved = was ? was : "";
    ~EnvGuard() { was ? ::setenv("OPCHAIN_CPU_ISA", saved.c_str(), 1) : ::unsetenv("OPCHAIN_CPU_ISA"); }
  } guard;
  for (cpu::Isa isa : cpu::kAllIsas) {
    SCOPED_TRACE(cpu::isa_name(isa));
    ::setenv("OPCHAIN_CPU_ISA", cpu::isa_name(isa), 1);
    const auto r = test::run_opchain("logits --model " + dir + " --ids-file " + dir +
                                     "/ids.txt --precision f32 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (!cpu::isa_supported(isa)) {
      EXPECT_NE(r.err.find("this CPU lacks that tier"), std::string::npos) << r.err;
      continue;
    }
    EXPECT_EQ(r.err.find("OPCHAIN_CPU_ISA"), std::string::npos) << r.err;
    const NpyArray got = read_npy_f32(out.string());
    ASSERT_EQ(got.shape, ref.shape);
    float worst = 0;
    for (size_t i = 0; i < got.data.size(); ++i) worst = std::max(worst, std::fabs(got.data[i] - ref.data[i]));
    EXPECT_LE(worst, 1e-3f);
  }
  ::setenv("OPCHAIN_CPU_ISA", "avx1024", 1);
  const auto r = test::run_opchain("logits --model " + dir + " --ids-file " + dir + "/ids.txt --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("OPCHAIN_CPU_ISA=avx1024 names no tier"), std::string::npos) << r.err;
  fs::remove(out);
}

// Without --precision a bf16 checkpoint runs at bf16 precision (Note [Matmul precision]): its logits are
// those of a bf16 run, so they are checked against ref_logits_bf16.npy, argmax for argmax.
TEST(CliLogits, DefaultPrecisionOfABf16CheckpointIsBf16) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto out = fs::temp_directory_path() / ("opchain-logits-auto-" + std::to_string(::getpid()) + ".npy");
  const auto r = test::run_opchain("logits --model " + dir + " --ids-file " + dir + "/ids.txt --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const NpyArray got = read_npy_f32(out.string()), ref = read_npy_f32(dir + "/ref_logits_bf16.npy"),
                 ref32 = read_npy_f32(dir + "/ref_logits.npy");
  ASSERT_EQ(got.shape, ref.shape);
  const size_t vocab = static_cast<size_t>(ref.shape[1]);
  float worst = 0, gap = 0, off32 = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    worst = std::max(worst, std::fabs(got.data[i] - ref.data[i]));
    gap = std::max(gap, std::fabs(ref32.data[i] - ref.data[i]));
    off32 = std::max(off32, std::fabs(got.data[i] - ref32.data[i]));
  }
  EXPECT_LE(worst, 2.0f * gap);
  EXPECT_GT(off32, 1e-3f) << "the default did not run at bf16 precision";
  for (size_t t = 0; t < got.data.size() / vocab; ++t) {
    const auto row = [&](const NpyArray& a) { return a.data.begin() + static_cast<std::ptrdiff_t>(t * vocab); };
    EXPECT_EQ(std::max_element(row(got), row(got) + static_cast<std::ptrdiff_t>(vocab)) - row(got),
              std::max_element(row(ref), row(ref) + static_cast<std::ptrdiff_t>(vocab)) - row(ref))
        << "argmax at position " << t;
  }
  fs::remove(out);
}

TEST(CliLogits, UnknownPrecisionIsAUsageError) {
  const auto r = test::run_opchain("logits --model " + test::model_dir("tiny-qwen3-moe") + " --ids 1 --precision fp8");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--precision: fp8 not in {auto,f32,bf16,quantized,int8}"), std::string::npos) << r.err;
}

TEST(CliLogits, BadInputsGiveOneLineAndNonZeroExit) {
  const auto tmp = fs::temp_directory_path() / ("opchain-bad-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string good = test::model_dir("tiny-qwen3-moe");
  // Unknown architecture.
  fs::copy(good, tmp / "arch", fs::copy_options::recursive);
  fs::permissions(tmp / "arch", fs::perms::owner_all, fs::perm_options::add);
  {
    std::ifstream in(tmp / "arch" / "config.json");
    std::string cfg((std::istreambuf_iterator<char>(in)), {});
    cfg.replace(cfg.find("Qwen3MoeForCausalLM"), 19, "MysteryForCausalLM");
    fs::permissions(tmp / "arch" / "config.json", fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(tmp / "arch" / "config.json") << cfg;
  }
  // Truncated weights.
  fs::copy(good, tmp / "trunc", fs::copy_options::recursive);
  fs::permissions(tmp / "trunc" / "model.safetensors", fs::perms::owner_write, fs::perm_options::add);
  fs::resize_file(tmp / "trunc" / "model.safetensors", 1000);
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"logits --model " + (tmp / "arch").string() + " --ids 1,2", "MysteryForCausalLM"},
      {"logits --model " + (tmp / "trunc").string() + " --ids 1,2", "model.safetensors"},
      {"logits --model /nonexistent --ids 1,2", "config.json"},
      {"logits --model " + good + " --ids 1,99999", "outside the vocabulary"},
      {"logits --model " + good + " --ids 1,x", "bad token id 'x'"},
      {"logits --model " + good + " --ids 1 --vendor tpu", "unknown vendor 'tpu'"},
  };
  for (const auto& c : cases) {
    const auto r = test::run_opchain(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  fs::remove_all(tmp);
}

TEST(CliOps, JsonListsEveryKeyForBothVendors) {
  const auto r = test::run_opchain("ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  std::set<std::string> keys;
  for (const auto& row : j) {
    keys.insert(row["key"].get<std::string>());
    EXPECT_FALSE(row["vendors"]["reference"].empty()) << row["key"];
    EXPECT_FALSE(row["vendors"]["cpu"].empty()) << row["key"];
    EXPECT_FALSE(row["schema"].get<std::string>().empty());
  }
  for (const char* k :
       {"embedding", "linear", "rms_norm", "add_rms_norm", "apply_rotary_pos_emb", "fill_kv_cache", "prefill_attention",
        "paged_prefill_attention", "paged_decode_attention", "silu_and_mul", "moe_gating_topk_softmax", "fused_moe",
        "moe_init_routing", "grouped_matmul", "swiglu", "moe_token_unpermute"})
    EXPECT_TRUE(keys.count(k)) << k;
  const auto table = test::run_opchain("ops");
  EXPECT_NE(table.out.find("fused_moe"), std::string::npos);
}

TEST(CliTrace, ShowsTheFiveLayerChainAndWritesChromeTrace) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto chrome = fs::temp_directory_path() / ("opchain-trace-" + std::to_string(::getpid()) + ".json");
  const auto r =
      test::run_opchain("trace --model " + dir + " --ids 1,2,3 --decode-steps 1 --chrome-trace " + chrome.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("model.layers.1.mlp.experts -> FusedMoE -> FusedMoe -> DefaultFusedMoeImpl -> fused_moe -> cpu:"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("comm=local"), std::string::npos);
  EXPECT_NE(r.out.find("is_decoding=1"), std::string::npos);
  EXPECT_NE(r.out.find("is_decoding=0"), std::string::npos);
  EXPECT_NE(r.out.find("    "), std::string::npos);  // fused_moe's sub-kernels are indented under it
  for (const char* sub : {"moe_init_routing", "grouped_matmul", "swiglu", "moe_token_unpermute"})
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  const auto j = nlohmann::json::parse(test::slurp(chrome));
  ASSERT_TRUE(j["traceEvents"].is_array());
  EXPECT_GT(j["traceEvents"].size(), 20u);
  EXPECT_EQ(j["traceEvents"][0]["ph"], "X");
  fs::remove(chrome);
}

// --warmup runs the prefill untraced first; the summary sums every top-level call per key (nested
// calls listed apart) and the traced call count is that of one run.
TEST(CliTrace, WarmupAndPerOpSummary) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto r = test::run_opchain("trace --model " + dir + " --ids 1,2,3 --warmup 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("per-op time (top level: "), std::string::npos) << r.out;
  const auto summary = r.out.substr(r.out.find("per-op time"));
  // A bf16 checkpoint runs at bf16 with a bf16 cache, which the prompt attends over (Note [KV cache dtype]).
  for (const char* line : {"  fused_moe", "  linear", "  paged_prefill_attention", "nested grouped_matmul"})
    EXPECT_NE(summary.find(line), std::string::npos) << line;
  // tiny-qwen3-moe: 2 layers x (q, k, v, o, router) + lm_head = 11 linear calls in one traced prefill.
  EXPECT_NE(summary.find(" 11 calls"), std::string::npos) << summary;
  const auto bad = test::run_opchain("trace --model " + dir + " --ids 1 --warmup -1");
  EXPECT_NE(bad.exit_code, 0);
}

// --batch N prefills the prompt as N sequences in one step and decodes them together; a second summary
// gives one decode step's per-op time. Hybrid models get a state slot per sequence.
TEST(CliTrace, BatchedDecodeSummary) {
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const auto r = test::run_opchain("trace --model " + dir + " --ids 1,2,3 --batch 3 --decode-steps 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("is_decoding=1 batch=3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q=f32[3, "), std::string::npos) << r.out;
  const auto at = r.out.find("per decode step of batch 3, mean of 2 steps (top level: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const auto decode = r.out.substr(at);
  for (const char* line : {"  fused_moe", "  paged_decode_attention", "nested grouped_matmul"})
    EXPECT_NE(decode.find(line), std::string::npos) << line;
  // One decode step: 2 layers x (q, k, v, o, router) + lm_head = 11 linear calls.
  EXPECT_NE(decode.find(" 11 calls"), std::string::npos) << decode;
  EXPECT_EQ(decode.find("prefill_attention"), std::string::npos) << decode;

  const auto hybrid = test::run_opchain("trace --model " + test::model_dir("tiny-qwen3_5-moe") +
                                        " --ids 1,2 --batch 2 --decode-steps 1");
  ASSERT_EQ(hybrid.exit_code, 0) << hybrid.err;
  EXPECT_NE(hybrid.out.find("state_slots=[0,1]"), std::string::npos) << hybrid.out;
  EXPECT_NE(hybrid.out.find("per decode step of batch 2, mean of 1 steps"), std::string::npos);

  const auto zero = test::run_opchain("trace --model " + dir + " --ids 1 --batch 0");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("--batch: must be an integer >= 1, got 0"), std::string::npos) << zero.err;
  const auto ids = fs::temp_directory_path() / ("opchain-trace-ids-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream f(ids);
    for (int i = 0; i < 1000; ++i) f << (i % 50) + 1 << " ";
  }
  const auto long_prefill = test::run_opchain("trace --model " + dir + " --ids-file " + ids.string() + " --batch 100");
  fs::remove(ids);
  EXPECT_NE(long_prefill.exit_code, 0);
  EXPECT_NE(
      long_prefill.err.find("--batch 100 x 1000 prompt tokens is 100000 tokens in one prefill step; at most 65536"),
      std::string::npos)
      << long_prefill.err;
  const auto huge = test::run_opchain("trace --model " + dir + " --ids 1 --batch 5000");
  EXPECT_NE(huge.exit_code, 0);
  EXPECT_NE(huge.err.find("--batch must be between 1 and 1024, got 5000"), std::string::npos) << huge.err;
}

}  // namespace
}  // namespace opchain
