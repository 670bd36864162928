// tools/quant_spec.h as quantize and make-model --quantize check a format, without the CLI
// (tests/apps/cli_quantize_test.cpp covers the flags' messages end to end).
#include "tools/quant_spec.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace opchain::tools {
namespace {

QuantSpec spec(const std::string& format) {
  QuantSpec s;
  s.format = format;
  return s;
}

TEST(QuantSpec, EachFormatGetsItsProducersDefaults) {
  const QuantFormatOptions fp8 = quant_format_options(spec("fp8-block"), DType::BF16);
  EXPECT_EQ(fp8.format, QuantFormat::Fp8Block);
  EXPECT_EQ(fp8.block_n, 128);
  EXPECT_EQ(fp8.block_k, 128);
  EXPECT_EQ(fp8.scale_dtype, DType::F32);
  EXPECT_EQ(quant_format_options(spec("gptq"), DType::BF16).scale_dtype, DType::F16);
  EXPECT_TRUE(quant_format_options(spec("gptq"), DType::BF16).symmetric);
  EXPECT_FALSE(quant_format_options(spec("awq"), DType::BF16).symmetric);
  // compressed-tensors keeps its scales in the model's dtype.
  EXPECT_EQ(quant_format_options(spec("w4a16"), DType::F32).scale_dtype, DType::F32);
  EXPECT_EQ(quant_format_options(spec("w8a8"), DType::BF16).scale_dtype, DType::BF16);
}

TEST(QuantSpec, ExplicitChoicesWin) {
  QuantSpec s = spec("fp8-block");
  s.block = "64x32";
  s.scale_dtype = "bf16";
  const QuantFormatOptions o = quant_format_options(s, DType::BF16);
  EXPECT_EQ(o.block_n, 64);
  EXPECT_EQ(o.block_k, 32);
  EXPECT_EQ(o.scale_dtype, DType::BF16);
  QuantSpec g = spec("gptq");
  g.gptq_format = "gptq_v2";
  g.symmetric = "false";
  g.act_order = true;
  const QuantFormatOptions go = quant_format_options(g, DType::BF16);
  EXPECT_TRUE(go.gptq_v2);
  EXPECT_FALSE(go.symmetric);
  EXPECT_TRUE(go.act_order);
}

TEST(QuantSpec, BadSpecsThrow) {
  QuantSpec s = spec("gptq");
  s.group_size = 0;
  EXPECT_THROW(quant_format_options(s, DType::BF16), InvalidArgumentError);
  s = spec("fp8-block");
  s.block = "128";
  EXPECT_THROW(quant_format_options(s, DType::BF16), InvalidArgumentError);
  s.block = "0,128";
  EXPECT_THROW(quant_format_options(s, DType::BF16), InvalidArgumentError);
  s = spec("awq");
  s.act_order = true;
  EXPECT_THROW(quant_format_options(s, DType::BF16), InvalidArgumentError);
}

}  // namespace
}  // namespace opchain::tools
