// Random-weight model directories: the presets' configs match the real checkpoints, the weights load
// and run, a sharded copy gives bit-identical logits to the single-file one, and a deep stack of random
// layers keeps its logits finite and of sane size.
#include "engine/random_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "io/hf_config.h"
#include "test_paths.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

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
  std::string str() const { return path.string(); }
};

std::vector<float> logits_of(const std::string& dir, const std::vector<int32_t>& ids) {
  LoadedModel m = load_model(dir, "cpu");
  const int64_t n = static_cast<int64_t>(ids.size());
  KvCache cache(m.config, 1 + (n + 15) / 16, 16);
  std::vector<int32_t> blocks;
  EXPECT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
  ModelRunner runner(*m.model, m.device, cache);
  SequenceStep step{ids, 0, blocks, true, cache.state_slots().allocate()};
  Tensor logits = runner.forward({&step, 1});
  return {logits.data<float>(), logits.data<float>() + logits.numel()};
}

TEST(RandomModel, PresetConfigsMatchTheRealCheckpoints) {
  const ModelConfig moe =
      parse_model_config(random_model_config_json("qwen3-30b-a3b", 0, DType::BF16), "qwen3-30b-a3b");
  EXPECT_EQ(moe.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(moe.num_hidden_layers, 48);
  EXPECT_EQ(moe.hidden_size, 2048);
  EXPECT_EQ(moe.num_attention_heads, 32);
  EXPECT_EQ(moe.num_key_value_heads, 4);
  EXPECT_EQ(moe.head_dim, 128);
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.num_experts_per_tok, 8);
  EXPECT_EQ(moe.moe_intermediate_size, 768);
  EXPECT_EQ(moe.intermediate_size, 6144);
  EXPECT_EQ(moe.vocab_size, 151936);
  EXPECT_EQ(moe.max_position_embeddings, 40960);
  EXPECT_DOUBLE_EQ(moe.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(moe.rms_norm_eps, 1e-6);
  EXPECT_TRUE(moe.norm_topk_prob);
  EXPECT_FALSE(moe.tie_word_embeddings);

  const ModelConfig dense = parse_model_config(random_model_config_json("qwen3-4b", 3, DType::F32), "qwen3-4b");
  EXPECT_EQ(dense.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(dense.num_hidden_layers, 3);
  EXPECT_EQ(dense.hidden_size, 2560);
  EXPECT_EQ(dense.num_key_value_heads, 8);
  EXPECT_EQ(dense.intermediate_size, 9728);
  EXPECT_TRUE(dense.tie_word_embeddings);

  // transformers writes every field, sorted; spot-check the ones our parser ignores.
  const auto j = nlohmann::json::parse(random_model_config_json("tiny-moe", 2, DType::F32));
  EXPECT_EQ(j["torch_dtype"], "float32");
  EXPECT_EQ(j["max_window_layers"], 2);
  EXPECT_EQ(j["model_type"], "qwen3_moe");
  EXPECT_TRUE(j.contains("router_aux_loss_coef"));
  EXPECT_TRUE(j["rope_scaling"].is_null());

  EXPECT_THROW(random_model_config_json("qwen9", 1, DType::BF16), InvalidArgumentError);
}

// The hybrid presets carry the hub configs' shapes (Qwen3.5-35B-A3B, Qwen3-Next-80B-A3B, Qwen3.5-9B).
TEST(RandomModel, HybridPresetsHaveTheRealShapes) {
  using LK = LayerKind;
  const ModelConfig a = parse_model_config(random_model_config_json("qwen3.5-35b-a3b", 4, DType::BF16), "p");
  EXPECT_EQ(a.architecture, "Qwen3_5MoeForCausalLM");
  EXPECT_EQ(a.layer_types,
            (std::vector<LK>{LK::LinearAttention, LK::LinearAttention, LK::LinearAttention, LK::FullAttention}));
  EXPECT_EQ(a.hidden_size, 2048);
  EXPECT_EQ(a.num_experts, 256);
  EXPECT_EQ(a.num_experts_per_tok, 8);
  EXPECT_EQ(a.vocab_size, 248320);
  EXPECT_EQ(a.rotary_dim, 64);
  EXPECT_EQ(a.linear.conv_dim(), 8192);
  const ModelConfig n = parse_model_config(random_model_config_json("qwen3-next-80b-a3b", 0, DType::BF16), "p");
  EXPECT_EQ(n.num_hidden_layers, 48);
  EXPECT_EQ(n.num_experts, 512);
  EXPECT_EQ(n.num_experts_per_tok, 10);
  EXPECT_TRUE(n.grouped_qkvz);
  EXPECT_EQ(n.num_full_attention_layers(), 12);
  const ModelConfig d = parse_model_config(random_model_config_json("qwen3.5-9b", 0, DType::BF16), "p");
  EXPECT_EQ(d.architecture, "Qwen3_5ForCausalLM");
  EXPECT_EQ(d.intermediate_size, 12288);
  EXPECT_EQ(d.num_experts, 0);
}

// The writer names and shapes hybrid tensors as the hub checkpoints do (Qwen3-Next: grouped
// projections, per-expert tensors; Qwen3.5: flat projections, fused experts), the loader reads them,
// and the reference and cpu vendors agree on the result.
TEST(RandomModel, HybridPresetsWriteLoadAndRun) {
  for (const char* preset : {"tiny-qwen3.5-moe", "tiny-qwen3-next"}) {
    SCOPED_TRACE(preset);
    TempDir dir(std::string("rm-") + preset);
    RandomModelOptions o;
    o.preset = preset;
    o.seed = 3;
    o.vocab_size = 512;
    o.dtype = DType::F32;
    o.out_dir = dir.str();
    write_random_model(o);
    const std::vector<int32_t> ids = {1, 500, 17, 3, 3, 42, 99, 7, 260, 11};
    const auto cpu = logits_of(dir.str(), ids);
    LoadedModel m = load_model(dir.str(), "reference");
    KvCache cache(m.config, 2, 16);
    std::vector<int32_t> blocks;
    ASSERT_TRUE(cache.allocator().allocate(1, blocks));
    ModelRunner runner(*m.model, m.device, cache);
    SequenceStep step{ids, 0, blocks, true, 0};
    Tensor ref = runner.forward({&step, 1});
    ASSERT_EQ(static_cast<int64_t>(cpu.size()), ref.numel());
    float diff = 0, absmax = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(cpu[static_cast<size_t>(i)]));
      diff = std::max(diff, std::fabs(cpu[static_cast<size_t>(i)] - ref.data<float>()[i]));
      absmax = std::max(absmax, std::fabs(ref.data<float>()[i]));
    }
    EXPECT_LE(diff, 1e-3f);
    EXPECT_GT(absmax, 0.01f);  // not all zero
  }
}

TEST(RandomModel, ShardedAndSingleFileGiveIdenticalLogits) {
  TempDir single("rm-single"), sharded("rm-sharded");
  RandomModelOptions o;
  o.preset = "tiny-moe";
  o.layers = 2;
  o.seed = 7;
  o.vocab_size = 1024;
  o.out_dir = single.str();
  o.max_shard_bytes = 0;
  const auto a = write_random_model(o);
  EXPECT_EQ(a.weight_files, std::vector<std::string>{"model.safetensors"});
  o.out_dir = sharded.str();
  o.max_shard_bytes = 1 << 20;
  const auto b = write_random_model(o);
  EXPECT_GT(b.weight_files.size(), 1u);
  EXPECT_TRUE(fs::exists(sharded.path / "model.safetensors.index.json"));
  EXPECT_EQ(a.weight_bytes, b.weight_bytes);
  EXPECT_EQ(a.parameters, b.parameters);
  EXPECT_TRUE(fs::exists(single.path / "config.json"));
  EXPECT_TRUE(fs::exists(single.path / "generation_config.json"));

  const std::vector<int32_t> ids = {1, 500, 17, 1023, 3, 3, 42, 900};
  const auto la = logits_of(single.str(), ids), lb = logits_of(sharded.str(), ids);
  ASSERT_EQ(la.size(), ids.size() * 1024);
  EXPECT_EQ(la, lb);  // same seed, same names: the same weights, bit for bit

  // Rewriting a sharded directory as a single file removes the old shards and index.
  o.max_shard_bytes = 0;
  write_random_model(o);
  EXPECT_FALSE(fs::exists(sharded.path / "model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(sharded.path / "model.safetensors"));
  EXPECT_EQ(logits_of(sharded.str(), ids), la);

  // Another seed, other weights.
  o.seed = 8;
  write_random_model(o);
  EXPECT_NE(logits_of(sharded.str(), ids), la);
}

// 48 random layers: with o_proj/down_proj scaled by 1/sqrt(2 * layers) the residual stays bounded, so
// logits stay finite and O(1) rather than growing with depth.
TEST(RandomModel, DeepModelLogitsStayFinite) {
  TempDir dir("rm-deep");
  RandomModelOptions o;
  o.preset = "tiny-moe";
  o.layers = 48;
  o.seed = 1;
  o.vocab_size = 2048;
  o.out_dir = dir.str();
  write_random_model(o);
  std::vector<int32_t> ids;
  for (int i = 0; i < 24; ++i) ids.push_back((i * 389 + 11) % 2048);
  const auto logits = logits_of(dir.str(), ids);
  float max_abs = 0;
  double sum_sq = 0;
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    max_abs = std::max(max_abs, std::fabs(v));
    sum_sq += static_cast<double>(v) * v;
  }
  const double rms = std::sqrt(sum_sq / static_cast<double>(logits.size()));
  EXPECT_LT(max_abs, 20.0f);
  EXPECT_GT(rms, 0.1);  // not collapsed to zero either
}

// A tied preset written straight into a format with its output projection quantised: the lm_head gets a
// quantised copy of the embedding, the config unties the pair, and the model loads and runs on it.
TEST(RandomModel, TiedPresetQuantisesItsOwnLmHead) {
  TempDir dir("rm-tied-lm-head");
  RandomModelOptions o;
  o.out_dir = dir.str();
  o.preset = "qwen3-4b";
  o.layers = 1;
  o.vocab_size = 256;
  o.quantize = QuantFormatOptions{};
  o.quantize->format = QuantFormat::Gptq;
  o.quantize->lm_head = true;
  const RandomModelResult r = write_random_model(o);
  EXPECT_EQ(r.quantized_layers, 8);  // 7 in the layer, and the lm_head
  const ModelConfig c = load_model_config(dir.str());
  EXPECT_FALSE(c.tie_word_embeddings);
  LoadedModel m = load_model(dir.str(), "cpu");
  EXPECT_TRUE(m.weights->contains("lm_head.qweight"));
  EXPECT_TRUE(m.weights->contains("model.embed_tokens.weight"));
  for (float v : logits_of(dir.str(), {1, 2, 3})) ASSERT_TRUE(std::isfinite(v));

  // A vocabulary GPTQ cannot hold (rows not a multiple of 8): the pair stays tied, and the lm_head is
  // reported as left dense rather than dropped without a word.
  TempDir odd("rm-tied-lm-head-odd");
  o.out_dir = odd.str();
  o.vocab_size = 100;
  const RandomModelResult kept = write_random_model(o);
  EXPECT_EQ(kept.quantized_layers, 7);
  EXPECT_EQ(kept.dense_layers, 1);
  EXPECT_TRUE(load_model_config(odd.str()).tie_word_embeddings);
  for (float v : logits_of(odd.str(), {1, 2, 3})) ASSERT_TRUE(std::isfinite(v));
}

TEST(RandomModel, RejectsBadOptions) {
  TempDir dir("rm-bad");
  RandomModelOptions o;
  o.out_dir = dir.str();
  o.preset = "nope";
  EXPECT_THROW(write_random_model(o), InvalidArgumentError);
  o.preset = "tiny-moe";
  o.dtype = DType::I32;
  EXPECT_THROW(write_random_model(o), InvalidArgumentError);
  o.dtype = DType::BF16;
  o.out_dir = "/proc/opchain-cannot-create/model";
  EXPECT_THROW(write_random_model(o), InvalidArgumentError);
}

}  // namespace
}  // namespace opchain
