#pragma once
// The writing side of the quantised formats: one dense linear layer [out, in] quantised by round to
// nearest into the tensors its format publishes, laid out exactly as the format's producer lays them out
// (fp8 blocks as DeepSeek-V3 / Qwen FP8, GPTQ as AutoGPTQ, AWQ as AutoAWQ's GEMM, compressed-tensors as
// llm-compressor), and the quantization_config that describes them. The layouts and their sources:
// docs/quantization.md. io/linear_weights.h reads them back.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "io/safetensors_writer.h"

namespace opchain {

enum class QuantFormat { Fp8Block, Gptq, Awq, W8A8, W4A16 };
// "fp8-block" | "gptq" | "awq" | "w8a8" | "w4a16"
std::optional<QuantFormat> parse_quant_format(std::string_view s);
const char* quant_format_name(QuantFormat f);

struct QuantFormatOptions {
  QuantFormat format = QuantFormat::W4A16;
  int64_t group_size = 128;              // gptq, awq, w4a16: input channels per scale
  int64_t block_n = 128, block_k = 128;  // fp8-block: weight_block_size
  bool symmetric = true;                 // gptq sym, awq zero_point = !symmetric, w4a16 symmetric
  bool act_order = false;                // gptq desc_act (g_idx), w4a16 actorder "group" (weight_g_idx)
  bool gptq_v2 = false;                  // gptq checkpoint_format gptq_v2 (zeros stored as they are)
  DType scale_dtype = DType::F32;        // dtype of the stored scales (producers write f32, bf16 or f16)
  bool lm_head = false;                  // quantise the output projection too (GPTQModel's lm_head: true)
};

// Whether the format can hold a layer of this shape; when not, `why` says which rule it breaks and the
// layer is left dense (and listed as such in the config), as the formats' producers do.
bool format_holds(const QuantFormatOptions& o, int64_t out, int64_t in, std::string* why);

// The tensors the format writes for linear layer `module` (dtypes, shapes, full names), in the order
// quantize_linear returns them.
std::vector<TensorDecl> quantized_linear_decls(const QuantFormatOptions& o, const std::string& module, int64_t out,
                                               int64_t in);

// W [out, in] (f32, row-major) quantised by round to nearest into those tensors.
std::vector<Tensor> quantize_linear(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in);

// fp8-block only: fused experts `name` [experts, rows, cols] as F8_E4M3 plus `<name>_scale_inv`
// [experts, ceil(rows / block_n), ceil(cols / block_k)] (the form transformers holds fp8 experts in).
std::vector<TensorDecl> quantized_fused_expert_decls(const QuantFormatOptions& o, const std::string& name,
                                                     int64_t experts, int64_t rows, int64_t cols);
std::vector<Tensor> quantize_fused_experts(const QuantFormatOptions& o, const float* w, int64_t experts, int64_t rows,
                                           int64_t cols);

// config.json's quantization_config for a model in this format whose linear layers `dense_modules`
// were left unquantised (named in the format's own exclusion list).
nlohmann::json quantization_config_json(const QuantFormatOptions& o, const std::vector<std::string>& dense_modules);

}  // namespace opchain
