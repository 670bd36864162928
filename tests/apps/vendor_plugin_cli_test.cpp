// The example plugin vendor through the CLI, as a user runs it: `--vendor-plugin libexample.so
// --vendor example` generates the same greedy tokens as cpu on the trained golden model, the trace
// chain and `opchain ops` show which vendor each op resolved to, and a broken plugin is one line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "apps/cli_run.h"
#include "opchain/vendor_abi.h"

namespace opchain {
namespace {

std::string plugin(const std::string& name) { return std::string(OPCHAIN_TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }
std::string example() { return plugin("example"); }

nlohmann::json generate_json(const std::string& extra) {
  const auto r = test::run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") +
                                   " --prompt \"The cat\" --temperature 0 --max-new-tokens 16 --json " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The example's kernels are capture-safe: decode replays graphs with them, as with cpu.
  EXPECT_EQ(r.err.find("graph mode off"), std::string::npos) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(VendorPluginCli, GoldenModelGeneratesTheSameTokensAsCpu) {
  for (const char* precision : {"bf16", "f32"}) {
    const std::string p = std::string(" --precision ") + precision;
    const auto cpu = generate_json("--vendor cpu" + p);
    const auto ex = generate_json("--vendor-plugin " + example() + " --vendor example" + p);
    ASSERT_TRUE(cpu.contains("ids")) << cpu.dump();
    ASSERT_TRUE(ex.contains("ids")) << ex.dump();
    EXPECT_EQ(ex["ids"], cpu["ids"]) << precision;
    EXPECT_EQ(ex["ids"].size(), 16u) << ex.dump();
  }
}

// A plugin kernel without OC_KERNEL_CAPTURE_SAFE is never recorded into a graph: capture refuses it
// by name (as for any vendor's kernel, Note [Graph capture]), and --eager runs it with cpu's tokens.
TEST(VendorPluginCli, KernelNotCaptureSafeIsNeverCaptured) {
  const std::string args = "generate --model " + test::model_dir("trained-qwen3-moe") +
                           " --prompt \"The cat\" --temperature 0 --max-new-tokens 8 --json ";
  const std::string nocapture = "--vendor-plugin " + plugin("test_plugin_nocapture") + " --vendor nocapture";
  const auto graph = test::run_opchain(args + nocapture);
  EXPECT_EQ(graph.exit_code, 1);
  EXPECT_EQ(
      graph.err.rfind("opchain: error: cannot capture a graph: kernel 'nocapture::rms_norm_bf16' (op rms_norm, bf16, "
                      "vendor 'nocapture'",
                      0),
      0u)
      << graph.err;
  EXPECT_NE(graph.err.find("is not capture-safe"), std::string::npos) << graph.err;
  const auto cpu = test::run_opchain(args + "--vendor cpu");
  const auto eager = test::run_opchain(args + nocapture + " --eager");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  EXPECT_EQ(nlohmann::json::parse(eager.out)["ids"], nlohmann::json::parse(cpu.out)["ids"]);
}

// Vendor ABI 1.1: a plugin's attention (decode, paged prefill, prefill) and fused_moe kernels, reading
// the marshalled step metadata and expert weights, generate cpu's greedy tokens, in graph mode (its
// kernels are capture-safe) and eagerly.
TEST(VendorPluginCli, OneOneAttentionAndMoeKernelsGenerateAsCpu) {
  const std::string abi11 = "--vendor-plugin " + plugin("test_plugin_abi11") + " --vendor abi11";
  for (const char* precision : {"bf16", "f32"}) {
    const std::string p = std::string(" --precision ") + precision;
    const auto cpu = generate_json("--vendor cpu" + p);
    ASSERT_TRUE(cpu.contains("ids")) << cpu.dump();
    for (const char* mode : {"", " --eager"}) {
      const auto got = generate_json(abi11 + p + mode);
      ASSERT_TRUE(got.contains("ids")) << got.dump();
      EXPECT_EQ(got["ids"], cpu["ids"]) << precision << mode;
    }
  }
  const auto r = test::run_opchain("trace --model " + test::model_dir("trained-qwen3-moe") +
                                   " --ids 1,2,3 --decode-steps 1 " + abi11);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-> fused_moe -> abi11:abi11::fused_moe_bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> paged_decode_attention -> abi11:abi11::paged_decode_attention_f32"), std::string::npos)
      << r.out;
}

// Vendor ABI 1.1: a plugin impl of the whole attention (its own KV-cache write and attention), built
// by the unchanged nn Attention module, generates cpu's tokens eagerly; graph capture refuses it.
TEST(VendorPluginCli, OneOnePluginImplGeneratesAsCpuEagerly) {
  const std::string impl = "--vendor-plugin " + plugin("test_plugin_impl") + " --vendor implplug";
  const std::string args = "generate --model " + test::model_dir("trained-qwen3-moe") +
                           " --prompt \"The cat\" --temperature 0 --max-new-tokens 12 --json ";
  for (const char* precision : {"bf16", "f32"}) {
    const std::string p = std::string(" --precision ") + precision;
    const auto cpu = test::run_opchain(args + "--vendor cpu" + p);
    ::setenv("OPCHAIN_TEST_IMPL_VERBOSE", "1", 1);
    const auto eager = test::run_opchain(args + impl + p + " --eager");
    ::unsetenv("OPCHAIN_TEST_IMPL_VERBOSE");
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    ASSERT_EQ(eager.exit_code, 0) << eager.err;
    EXPECT_EQ(nlohmann::json::parse(eager.out)["ids"], nlohmann::json::parse(cpu.out)["ids"]) << precision;
    EXPECT_NE(eager.err.find("implplug: attention impl for model.layers.3.self_attn.attn"), std::string::npos)
        << eager.err;
  }
  const auto graph = test::run_opchain(args + impl);
  EXPECT_EQ(graph.exit_code, 1);
  EXPECT_NE(graph.err.find("plugin impl 'implplug::fused_attention' (op paged_decode_attention, vendor 'implplug')"),
            std::string::npos)
      << graph.err;
}

TEST(VendorPluginCli, TraceChainShowsTheResolvedVendor) {
  const auto r =
      test::run_opchain("trace --model " + test::model_dir("trained-qwen3-moe") + " --ids 1,2,3 --decode-steps 1" +
                        " --vendor-plugin " + example() + " --vendor example");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The plugin's own kernels, and the fallback's for the ops it lacks.
  EXPECT_NE(r.out.find("-> rms_norm -> example:example::rms_norm_bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> linear -> example:example::linear_bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> fused_moe -> cpu:"), std::string::npos) << r.out;
}

TEST(VendorPluginCli, OpsShowsPluginAndFallback) {
  const auto r = test::run_opchain("ops --vendor-plugin " + example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vendor example from " + example() + ", falls back to cpu"), std::string::npos) << r.out;
  const auto j = test::run_opchain("ops --json --vendor-plugin " + example());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  for (const auto& row : nlohmann::json::parse(j.out)) {
    const std::string key = row["key"];
    ASSERT_TRUE(row.contains("resolved")) << key;
    ASSERT_TRUE(row.contains("abi_fields")) << key;
    if (key == "rms_norm") {
      EXPECT_EQ(row["resolved"]["example"]["f32"], "example");
      EXPECT_EQ(row["resolved"]["example"]["bf16"], "example");
      EXPECT_EQ(row["resolved"]["example"]["f16"], "cpu");
      EXPECT_EQ(row["abi_fields"][2]["name"], "eps");
      EXPECT_EQ(row["abi_fields"][2]["kind"], "f32");
    }
    if (key == "fused_moe") {
      EXPECT_EQ(row["resolved"]["example"]["bf16"], "cpu");
      EXPECT_TRUE(row["plugin_ok"].get<bool>());  // vendor ABI 1.1 marshals every op
      EXPECT_EQ(row["abi_fields"][1]["kind"], "expert_weights");
      EXPECT_EQ(row["abi_fields"][5]["kind"], "moe_meta");
    }
  }
}

TEST(VendorPluginCli, PluginsFromTheEnvironment) {
  ::setenv("OPCHAIN_VENDOR_PLUGINS", example().c_str(), 1);
  const auto r = test::run_opchain("ops");
  ::unsetenv("OPCHAIN_VENDOR_PLUGINS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vendor example from " + example()), std::string::npos) << r.out;
}

TEST(VendorPluginCli, BrokenPluginIsOneLine) {
  const std::string path = plugin("test_plugin_wrong_major");
  const auto r = test::run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") +
                                   " --prompt x --vendor-plugin " + path + " --vendor brokenplug");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "opchain: error: vendor plugin " + path + ": built against vendor ABI 2.0, this opchain speaks 1." +
                       std::to_string(OPCHAIN_VENDOR_ABI_MINOR) +
                       " (major versions must match; rebuild the plugin against this opchain's vendor_abi.h)\n");
}

}  // namespace
}  // namespace opchain
