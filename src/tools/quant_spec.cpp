#include "tools/quant_spec.h"

#include <stdexcept>

#include "core/error.h"

namespace opchain::tools {

QuantFormatOptions quant_format_options(const QuantSpec& f, DType model_dtype) {
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

}  // namespace opchain::tools
