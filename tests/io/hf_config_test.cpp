#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
      "num_attention_heads":3,"num_key_value_heads":2,"intermediate_size":4})")
                .find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(err(R"({"architectures":["LlamaForCausalLM"],"vocab_size":8,"hidden_size":8,"num_hidden_layers":1,
      "num_attention_heads":2,"intermediate_size":4,"rope_scaling":{"rope_type":"longrope","factor":2}})")
                .find("longrope"),
            std::string::npos);
  EXPECT_NE(err("[1,2").find("not valid JSON"), std::string::npos);
  EXPECT_THROW(load_model_config("/nonexistent/dir"), FormatError);
}

// head_dim sized the rotary table (and the KV cache) before any weight was looked at.
TEST(HfConfig, SizesBeyondTheLimitsAreRefused) {
  nlohmann::json j = nlohmann::json::parse(kMoe);
  j["head_dim"] = int64_t{1} << 20;
  try {
    parse_model_config(j.dump(), "big/config.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("big/config.json: field 'head_dim' is 1048576, over opchain's limit of 4096"),
              std::string::npos)
        << e.what();
  }
  // Past 32 bits a size is refused before any arithmetic on it (head_dim x partial_rotary_factor).
  j["head_dim"] = int64_t{1} << 60;
  try {
    parse_model_config(j.dump(), "big/config.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the 32-bit range"), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(kMoe);
  j["max_position_embeddings"] = -5;
  EXPECT_THROW(parse_model_config(j.dump(), "config.json"), FormatError);
  j = nlohmann::json::parse(kMoe);
  j["rope_theta"] = 1e300;
  EXPECT_THROW(parse_model_config(j.dump(), "config.json"), FormatError);
}

// The error message dumped the wrong-typed field, and dump() recursed once per level.
TEST(HfConfig, DeeplyNestedFieldIsRefused) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string text = std::string(kMoe).substr(0, std::string(kMoe).size() - 1) + R"(,"head_dim":)" + deep + "}";
  try {
    parse_model_config(text, "deep/config.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("deep/config.json nests deeper than 128 levels"), std::string::npos)
        << e.what();
  }
  nlohmann::json j = nlohmann::json::parse(kMoe);
  j["head_dim"] = std::string(10000, 'x');
  try {
    parse_model_config(j.dump(), "config.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << "the field is shown cut short";
  }
}

}  // namespace
}  // namespace opchain
