#pragma once
// A quantised format as `quantize` and `make-model --quantize` take it from the user, and its
// checking into the QuantFormatOptions the writers use (io/quant_writer.h).
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "io/quant_writer.h"

namespace opchain::tools {

struct QuantSpec {
  std::string format;                // fp8-block, gptq, awq, w8a8 or w4a16; empty: none
  int64_t group_size = 128;          // gptq, awq, w4a16: input channels per scale (-1: one group per row)
  std::string block = "128,128";     // fp8-block: weight_block_size as ROWS,COLS
  std::string symmetric;             // "true", "false", or empty for the format's producer's choice
  bool act_order = false;            // gptq: desc_act with a g_idx; w4a16: actorder group
  bool lm_head = false;              // quantise the output projection too
  std::string gptq_format = "gptq";  // gptq or gptq_v2
  std::string scale_dtype;           // f32, bf16 or f16; empty: the format's usual one
};

// The options the spec describes; `model_dtype` is the dense weights' dtype (compressed-tensors keeps
// scales in it, as llm-compressor does). A bad spec throws InvalidArgumentError naming its flag.
QuantFormatOptions quant_format_options(const QuantSpec& spec, DType model_dtype);

}  // namespace opchain::tools
