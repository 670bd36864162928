// Config semantics of the hybrid decoders as transformers 5.x reads them (docs/hybrid-models.md):
// the layer schedule, defaults that differ from Qwen3-MoE's, the hub layout, rope precedence, and
// clear errors for configs whose keys contradict each other.
#include <gtest/gtest.h>

#include "core/error.h"
#include "io/hf_config.h"
#include "test_paths.h"

namespace opchain {
namespace {

using LK = LayerKind;
constexpr LK L = LK::LinearAttention, F = LK::FullAttention;

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "config.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(HybridConfig, Qwen3NextGoldenModel) {
  const ModelConfig c = load_model_config(test::model_dir("tiny-qwen3-next"));
  EXPECT_EQ(c.layer_types, (std::vector<LK>{L, F, L, F}));  // full_attention_interval 2, no layer_types key
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.rotary_dim, 8);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e7);
  EXPECT_TRUE(c.grouped_qkvz);
  EXPECT_TRUE(c.zero_centered_norms);
  EXPECT_TRUE(c.attn_output_gate);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FALSE(c.is_moe_layer(1));  // mlp_only_layers [1]
  EXPECT_TRUE(c.is_moe_layer(2));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.linear.conv_dim(), 2 * 2 * 16 + 4 * 24);
  EXPECT_EQ(c.weight_prefix, "model.");
  EXPECT_EQ(c.num_linear_attention_layers(), 2);
}

TEST(HybridConfig, Qwen3_5LayoutsAgree) {
  const ModelConfig text = load_model_config(test::model_dir("tiny-qwen3_5-moe"));
  const ModelConfig hub = load_model_config(test::model_dir("tiny-qwen3_5-moe-vl"));
  for (const ModelConfig* c : {&text, &hub}) {
    EXPECT_EQ(c->layer_types, (std::vector<LK>{L, L, L, F}));
    EXPECT_DOUBLE_EQ(c->rope_theta, 1e7);  // from rope_parameters
    EXPECT_EQ(c->rotary_dim, 8);
    EXPECT_FALSE(c->grouped_qkvz);
    EXPECT_TRUE(c->norm_topk_prob);
    EXPECT_EQ(c->num_experts, 8);
    EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{511}));
    for (int64_t l = 0; l < 4; ++l) EXPECT_TRUE(c->is_moe_layer(l));
  }
  EXPECT_EQ(text.weight_prefix, "model.");
  EXPECT_EQ(hub.weight_prefix, "model.language_model.");
  const ModelConfig dense = load_model_config(test::model_dir("tiny-qwen3_5"));
  EXPECT_EQ(dense.layer_types, (std::vector<LK>{L, F, L}));  // an explicit list wins over the interval
  EXPECT_EQ(dense.num_experts, 0);
  EXPECT_EQ(dense.intermediate_size, 96);
}

// Absent keys take the config classes' defaults, which are not Qwen3-MoE's.
TEST(HybridConfig, DefaultsAreTheConfigClasses) {
  const ModelConfig next = parse_model_config(R"({"architectures":["Qwen3NextForCausalLM"]})", "config.json");
  EXPECT_EQ(next.head_dim, 256);   // not hidden / heads = 128
  EXPECT_EQ(next.rotary_dim, 64);  // partial_rotary_factor 0.25
  EXPECT_DOUBLE_EQ(next.rope_theta, 10000.0);
  EXPECT_EQ(next.num_hidden_layers, 48);
  EXPECT_EQ(next.num_experts, 512);
  EXPECT_EQ(next.num_experts_per_tok, 10);
  EXPECT_TRUE(next.norm_topk_prob);
  EXPECT_EQ(next.linear.num_key_heads, 16);
  EXPECT_EQ(next.linear.num_value_heads, 32);
  for (int64_t l = 0; l < 48; ++l) EXPECT_EQ(next.is_linear_attention(l), (l + 1) % 4 != 0) << l;
  const ModelConfig moe =
      parse_model_config(R"({"architectures":["Qwen3_5MoeForCausalLM"],"norm_topk_prob":false})", "c");
  EXPECT_TRUE(moe.norm_topk_prob);  // Qwen3.5-MoE always renormalises
  EXPECT_EQ(moe.num_experts, 256);
  EXPECT_EQ(moe.vocab_size, 248320);
  EXPECT_EQ(moe.num_hidden_layers, 40);
  const ModelConfig dense = parse_model_config(R"({"architectures":["Qwen3_5ForCausalLM"]})", "c");
  EXPECT_EQ(dense.num_key_value_heads, 4);
  EXPECT_EQ(dense.intermediate_size, 12288);
}

TEST(HybridConfig, RopePrecedence) {
  // rope_scaling wins over rope_parameters; theta and the partial factor come from that dict first.
  const ModelConfig a = parse_model_config(
      R"({"architectures":["Qwen3_5MoeForCausalLM"],"head_dim":64,"rope_theta":5.0,"partial_rotary_factor":0.5,
          "rope_parameters":{"rope_type":"default","rope_theta":7.0,"partial_rotary_factor":0.25},
          "rope_scaling":{"rope_type":"linear","factor":2.0,"rope_theta":9.0}})",
      "c");
  EXPECT_EQ(a.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ(a.rope_theta, 9.0);
  EXPECT_EQ(a.rotary_dim, 32);  // rope_scaling has no factor: the top-level 0.5
  const ModelConfig b = parse_model_config(
      R"({"architectures":["Qwen3_5MoeForCausalLM"],"head_dim":64,"rope_theta":5.0,"partial_rotary_factor":0.5,
          "rope_parameters":{"rope_type":"default","rope_theta":7.0,"partial_rotary_factor":0.25}})",
      "c");
  EXPECT_DOUBLE_EQ(b.rope_theta, 7.0);
  EXPECT_EQ(b.rotary_dim, 16);
}

TEST(HybridConfig, LegacyLayerNamesAndTheHubWrapperTie) {
  const ModelConfig c = parse_model_config(
      R"({"architectures":["Qwen3_5ForConditionalGeneration"],"tie_word_embeddings":true,
          "text_config":{"num_hidden_layers":2,"layer_types":["mamba","attention"],"tie_word_embeddings":false}})",
      "c");
  EXPECT_EQ(c.layer_types, (std::vector<LK>{L, F}));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.weight_prefix, "model.language_model.");
}

TEST(HybridConfig, ContradictoryKeysAreClearErrors) {
  EXPECT_NE(
      error_of(R"({"architectures":["Qwen3NextForCausalLM"],"num_hidden_layers":3,"layer_types":["linear_attention"]})")
          .find("'layer_types' lists 1 layers but num_hidden_layers is 3"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"architectures":["Qwen3NextForCausalLM"],"num_hidden_layers":1,"layer_types":["sliding"]})")
                .find("'sliding'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures":["Qwen3_5ForCausalLM"],"linear_num_key_heads":3,"linear_num_value_heads":4})")
                .find("must be a multiple of linear_num_key_heads (3)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures":["Qwen3_5MoeForConditionalGeneration"]})").find("'text_config'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"architectures":["Qwen3_5ForCausalLM"],"head_dim":12,"partial_rotary_factor":0.25})")
                .find("partial_rotary_factor"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"architectures":["Qwen3_5MoeForConditionalGeneration"],"text_config":{"num_hidden_layers":"four"}})")
          .find("(text_config): field 'num_hidden_layers'"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"architectures":["Qwen3NextForCausalLM"],"full_attention_interval":0})")
                .find("full_attention_interval"),
            std::string::npos);
}

}  // namespace
}  // namespace opchain
