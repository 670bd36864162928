#pragma once
// The flags that choose a quantised format, shared by `quantize` and `make-model --quantize`.
#include <CLI/CLI.hpp>
#include <string>

#include "core/error.h"
#include "io/quant_writer.h"

namespace opchain::cli {

struct QuantFlags {
  std::string format, block = "128,128", symmetric, gptq_format = "gptq", scale_dtype;
  int64_t group_size = 128;
  bool act_order = false, lm_head = false;
};

inline void add_quant_flags(CLI::App* cmd, QuantFlags& f, const std::string& format_flag, bool format_required) {
  auto* opt =
      cmd->add_option(format_flag, f.format,
                      "quantised format: fp8-block (quant_method fp8, block scales), gptq (4-bit), awq (4-bit gemm), "
                      "w8a8 (compressed-tensors int8 weights and dynamic int8 activations), w4a16 (compressed-tensors "
                      "pack-quantized int4)")
          ->check(CLI::IsMember({"fp8-block", "gptq", "awq", "w8a8", "w4a16"}));
  if (format_required) opt->required();
  cmd->add_option("--group-size", f.group_size, "gptq, awq, w4a16: input channels per scale (-1: one group per row)")
      ->capture_default_str();
  cmd->add_option("--block", f.block, "fp8-block: weight_block_size as ROWS,COLS")->capture_default_str();
  cmd->add_option("--symmetric", f.symmetric,
                  "true or false (default: gptq and w4a16 symmetric, awq with zero points, as their producers)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_flag("--act-order", f.act_order, "gptq: desc_act with a g_idx; w4a16: actorder group with weight_g_idx");
  cmd->add_flag("--lm-head", f.lm_head,
                "quantise the output projection too (gptq lm_head: true; compressed-tensors; fp8)");
  cmd->add_option("--gptq-format", f.gptq_format,
                  "gptq checkpoint_format: gptq (v1, zeros stored minus one) or gptq_v2")
      ->check(CLI::IsMember({"gptq", "gptq_v2"}))
      ->capture_default_str();
  cmd->add_option("--scale-dtype", f.scale_dtype,
                  "dtype of the stored scales: f32, bf16 or f16 (default: fp8 f32, gptq and awq f16, "
                  "compressed-tensors the model's own)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
}

// The options the flags describe; `model_dtype` is the dense weights' dtype (compressed-tensors keeps
// scales in it, as llm-compressor does).
inline QuantFormatOptions quant_options(const QuantFlags& f, DType model_dtype) {
  QuantFormatOptions o;
  o.format = *parse_quant_format(f.format);
  if (f.group_size == 0 || f.group_size < -1)
    throw InvalidArgumentError("--group-size must be positive or -1, got " + std::to_string(f.group_size));
  o.group_size = f.group_size;
  const auto comma = f.block.find_first_of(",x");
  try {
    if (comma == std::string::npos) throw std::invalid_argument("no comma");
    size_t used = 0;
    o.block_n = std::stoll(f.block.substr(0, comma), &used);
    o.block_k = std::stoll(f.block.substr(comma + 1));
  } catch (const std::exception&) {
    throw InvalidArgumentError("--block must be ROWS,COLS (e.g. 128,128), got '" + f.block + "'");
  }
  if (o.block_n <= 0 || o.block_k <= 0)
    throw InvalidArgumentError("--block sizes must be positive, got '" + f.block + "'");
  o.symmetric = f.symmetric.empty() ? o.format != QuantFormat::Awq : f.symmetric == "true";
  o.act_order = f.act_order;
  if (o.act_order && o.format != QuantFormat::Gptq && o.format != QuantFormat::W4A16)
    throw InvalidArgumentError("--act-order applies to gptq and w4a16 only");
  o.gptq_v2 = f.gptq_format == "gptq_v2";
  o.lm_head = f.lm_head;
  if (!f.scale_dtype.empty())
    parse_dtype(f.scale_dtype, o.scale_dtype);
  else if (o.format == QuantFormat::Fp8Block)
    o.scale_dtype = DType::F32;
  else if (o.format == QuantFormat::Gptq || o.format == QuantFormat::Awq)
    o.scale_dtype = DType::F16;
  else
    o.scale_dtype = model_dtype == DType::F32 || model_dtype == DType::F16 ? model_dtype : DType::BF16;
  return o;
}

}  // namespace opchain::cli
