// quantization_config parsing: each method's keys and defaults, the exclusion rules, and a clear error
// for every config the engine cannot read.
#include "io/quant_config.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace opchain {
namespace {

QuantConfig parse(const std::string& q) {
  return parse_quant_config("{\"quantization_config\": " + q + "}", "m/config.json");
}

void expect_error(const std::string& q, const std::string& fragment) {
  try {
    parse(q);
    FAIL() << "no error for " << q;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m/config.json"), std::string::npos) << e.what();
  }
}

TEST(QuantConfig, AbsentOrNullIsUnquantised) {
  EXPECT_FALSE(parse_quant_config("{}", "c").quantized());
  EXPECT_FALSE(parse("null").quantized());
}

TEST(QuantConfig, Fp8BlockAndPerTensor) {
  QuantConfig c =
      parse(R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 64],
                            "modules_to_not_convert": ["lm_head", "model.layers.0.mlp.gate"]})");
  EXPECT_EQ(c.method, QuantMethod::Fp8);
  EXPECT_EQ(c.block_n, 128);
  EXPECT_EQ(c.block_k, 64);
  EXPECT_TRUE(c.excludes("lm_head"));
  EXPECT_TRUE(c.excludes("model.layers.0.mlp.gate"));
  EXPECT_FALSE(c.excludes("model.layers.0.mlp.gate_proj"));  // the entry is a module, not a prefix of a name
  c = parse(R"({"quant_method": "fp8", "ignored_layers": ["lm_head"]})");  // vLLM's spelling
  EXPECT_EQ(c.block_n, 0);
  EXPECT_TRUE(c.excludes("lm_head"));
}

TEST(QuantConfig, Fp8ErrorsNameTheKey) {
  expect_error(R"({"quant_method": "fp8", "weight_block_size": [128]})", "'weight_block_size'");
  expect_error(R"({"quant_method": "fp8", "weight_block_size": [0, 128]})", "'weight_block_size'");
  expect_error(R"({"quant_method": "fp8", "activation_scheme": "static"})", "static");
  expect_error(R"({"quant_method": "fp8", "fmt": "e5m2"})", "'fmt'");
}

TEST(QuantConfig, GptqVersionsAndDynamicExclusions) {
  QuantConfig c = parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": true, "sym": false,
                            "checkpoint_format": "gptq_v2", "dynamic": {"-:.*mlp\\.gate$": {}}})");
  EXPECT_EQ(c.method, QuantMethod::Gptq);
  EXPECT_EQ(c.group_size, 32);
  EXPECT_TRUE(c.desc_act);
  EXPECT_FALSE(c.sym);
  EXPECT_TRUE(c.gptq_v2);
  EXPECT_TRUE(c.excludes("model.layers.3.mlp.gate"));
  EXPECT_FALSE(c.excludes("model.layers.3.mlp.gate_proj"));
  EXPECT_FALSE(parse(R"({"quant_method": "gptq", "bits": 4})").gptq_v2);
  EXPECT_EQ(parse(R"({"quant_method": "gptq", "group_size": -1})").group_size, -1);
}

TEST(QuantConfig, GptqErrors) {
  expect_error(R"({"quant_method": "gptq", "bits": 8})", "'bits' is 8");
  expect_error(R"({"quant_method": "gptq", "bits": 3})", "'bits' is 3");
  expect_error(R"({"quant_method": "gptq", "group_size": 0})", "'group_size'");
  expect_error(R"({"quant_method": "gptq", "checkpoint_format": "marlin"})", "marlin");
  expect_error(R"({"quant_method": "gptq", "dynamic": {"+:.*": {"bits": 8}}})", "'dynamic'");
  expect_error(R"({"quant_method": "gptq", "bits": "4"})", "'bits' must be an integer");
}

TEST(QuantConfig, AwqGemmAndItsSubstringExclusions) {
  QuantConfig c =
      parse(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": true, "version": "GEMM",
                            "modules_to_not_convert": ["visual"]})");
  EXPECT_EQ(c.method, QuantMethod::Awq);
  EXPECT_EQ(c.group_size, 64);
  EXPECT_TRUE(c.zero_point);
  EXPECT_TRUE(c.excludes("model.visual.blocks.0.attn.qkv"));  // AutoAWQ and vLLM test substrings
  expect_error(R"({"quant_method": "awq", "version": "gemv"})", "'version'");
  expect_error(R"({"quant_method": "awq", "bits": 8})", "'bits'");
}

TEST(QuantConfig, CompressedTensorsSchemesTargetsAndIgnore) {
  const QuantConfig c = parse(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true,
                                   "strategy": "group", "group_size": 128}}},
    "ignore": ["lm_head", "re:.*mlp.gate$"]})");
  EXPECT_EQ(c.method, QuantMethod::CompressedTensors);
  ASSERT_EQ(c.schemes.size(), 1u);
  EXPECT_EQ(c.schemes[0].format, "pack-quantized");  // the global format when a group names none
  EXPECT_TRUE(c.excludes("lm_head"));
  EXPECT_TRUE(c.excludes("model.layers.0.mlp.gate"));
  EXPECT_FALSE(
      c.excludes("model.layers.0.mlp.gate_proj"));  // re.match: anchored at the start, and the $ is the pattern's
  EXPECT_NE(c.scheme_for("model.layers.0.self_attn.q_proj"), nullptr);
}

TEST(QuantConfig, CompressedTensorsW8A8AndFp8) {
  const QuantConfig w8 = parse(R"({"quant_method": "compressed-tensors", "format": "int-quantized",
    "config_groups": {"g": {"targets": ["re:.*proj$"],
      "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
      "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": true}}}})");
  ASSERT_TRUE(w8.schemes[0].input_activations.has_value());
  EXPECT_NE(w8.scheme_for("model.layers.0.mlp.down_proj"), nullptr);
  EXPECT_EQ(w8.scheme_for("model.layers.0.mlp.gate"), nullptr);
  const QuantConfig fp8 = parse(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
    "config_groups": {"g": {"targets": ["Linear"],
      "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]},
      "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": true}}}})");
  EXPECT_EQ(fp8.schemes[0].weights->block_rows, 128);
}

TEST(QuantConfig, CompressedTensorsErrors) {
  const std::string head =
      R"({"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": {"targets": ["Linear"], )";
  expect_error(head + R"("weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
      "input_activations": {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": false}}}})",
               "static input activations");
  expect_error(head + R"("weights": {"num_bits": 2, "type": "int", "strategy": "channel"}}}})", "2-bit int");
  expect_error(head + R"("weights": {"num_bits": 8, "type": "int", "strategy": "group", "group_size": 128}}}})",
               "strategy 'group'");
  expect_error(
      R"({"quant_method": "compressed-tensors", "format": "marlin-24", "config_groups": {"g": {"targets": ["Linear"],
      "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}})",
      "marlin-24");
  expect_error(R"({"quant_method": "compressed-tensors", "config_groups": {}})", "'config_groups'");
  expect_error(
      R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"g": {"targets": ["re:(["],
      "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}})",
      "invalid regex");
}

TEST(QuantConfig, UnknownMethodAndMalformedJson) {
  expect_error(R"({"quant_method": "bitsandbytes"})", "'quant_method' is 'bitsandbytes'");
  expect_error(R"("fp8")", "must be an object");
  EXPECT_THROW(parse_quant_config("{", "m/config.json"), FormatError);
}

}  // namespace
}  // namespace opchain
