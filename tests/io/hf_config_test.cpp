#include <gtest/gtest.h>

#include "core/error.h"
#include "io/hf_config.h"
#include "test_paths.h"

namespace opchain {
namespace {

const char* kMoe = R"({"architectures":["Qwen3MoeForCausalLM"],"vocab_size":10,"hidden_size":8,"num_hidden_layers":4,
  "num_attention_heads":2,"num_key_value_heads":1,"num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":4,
  "intermediate_size":16,"decoder_sparse_step":2,"mlp_only_layers":[3]})";

TEST(HfConfig, MoeLayerPlacementFollowsTransformers) {
  const ModelConfig c = parse_model_config(kMoe, "config.json");
  EXPECT_FALSE(c.is_moe_layer(0));  // (0+1) % 2 != 0
  EXPECT_TRUE(c.is_moe_layer(1));
  EXPECT_FALSE(c.is_moe_layer(2));
  EXPECT_FALSE(c.is_moe_layer(3));  // in mlp_only_layers
  EXPECT_EQ(c.head_dim, 4);         // hidden / heads when head_dim is absent
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.norm_topk_prob);
}

TEST(HfConfig, HeadDimFromConfigWins) {
  const ModelConfig c = load_model_config(test::model_dir("tiny-qwen3-dense"));
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_NE(c.head_dim * c.num_attention_heads, c.hidden_size);
}

TEST(HfConfig, Qwen2HasQkvBiasAndNoOBias) {
  const ModelConfig c = load_model_config(test::model_dir("tiny-qwen2-moe"));
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_EQ(c.shared_expert_intermediate_size, 128);
}

TEST(HfConfig, Llama3RopeScalingParsed) {
  const ModelConfig c = load_model_config(test::model_dir("tiny-llama"));
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Llama3);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 64);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
}

TEST(HfConfig, UnknownArchitectureNamesItAndTheSupportedOnes) {
  try {
    parse_model_config(R"({"architectures":["GPTNeoXForCausalLM"],"vocab_size":1})", "/m/config.json");
    FAIL();
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("/m/config.json"), std::string::npos);
    EXPECT_NE(msg.find("GPTNeoXForCausalLM"), std::string::npos);
    EXPECT_NE(msg.find("Qwen3MoeForCausalLM"), std::string::npos);
  }
}

TEST(HfConfig, BadFieldsNameTheField) {
  auto err = [](const std::string& text) {
    try {
      parse_model_config(text, "config.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err(R"({"architectures":["LlamaForCausalLM"],"vocab_size":"x"})").find("'vocab_size'"), std::string::npos);
  EXPECT_NE(err(R"({"architectures":["LlamaForCausalLM"],"vocab_size":8,"hidden_size":8,"num_hidden_layers":1,
      "num_attention_heads":3,"num_key_value_heads":2,"intermediate_size":4})").find("num_key_value_heads"), std::string::npos);
  EXPECT_NE(err(R"({"architectures":["LlamaForCausalLM"],"vocab_size":8,"hidden_size":8,"num_hidden_layers":1,
      "num_attention_heads":2,"intermediate_size":4,"rope_scaling":{"rope_type":"longrope","factor":2}})").find("longrope"),
            std::string::npos);
  EXPECT_NE(err("[1,2").find("not valid JSON"), std::string::npos);
  EXPECT_THROW(load_model_config("/nonexistent/dir"), FormatError);
}

}  // namespace
}  // namespace opchain
