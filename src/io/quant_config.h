#pragma once
// A checkpoint's `quantization_config` (config.json), read into what the loader needs: the method,
// its parameters, and which modules it quantises. The formats' rules, with their sources:
// docs/quantization.md.
#include <optional>
#include <string>
#include <vector>

namespace opchain {

enum class QuantMethod { None, Fp8, Gptq, Awq, CompressedTensors };
const char* quant_method_name(QuantMethod m);

// compressed-tensors QuantizationArgs (the parts a reader needs).
struct CtArgs {
  int bits = 8;
  bool is_float = false;  // type "float" (fp8) vs "int"
  bool symmetric = true;
  std::string strategy;  // tensor | channel | group | block | token
  int64_t group_size = 0;
  int64_t block_rows = 0, block_cols = 0;
  bool dynamic = false;
};

struct CtScheme {
  std::vector<std::string> targets;  // "Linear", exact module names, or "re:<regex>"
  std::optional<CtArgs> weights, input_activations;
  std::string format;  // per-group format (mixed-precision), else the global one
};

struct QuantConfig {
  QuantMethod method = QuantMethod::None;
  std::string source;  // "<dir>/config.json", for errors
  // fp8
  int64_t block_n = 0, block_k = 0;  // weight_block_size; 0: per-tensor
  bool dynamic_activations = true;   // activation_scheme
  // gptq / awq
  int bits = 4;
  int64_t group_size = 128;  // -1: one group over all input channels
  bool desc_act = false;
  bool sym = true;
  bool gptq_v2 = false;    // checkpoint_format gptq_v2: zeros stored as they are (v1 stores zero - 1)
  bool zero_point = true;  // awq
  // compressed-tensors
  std::string format;
  std::vector<CtScheme> schemes;
  // Modules left in high precision: fp8 modules_to_not_convert / ignored_layers, awq
  // modules_to_not_convert, compressed-tensors ignore ("re:" entries are regexes), gptq dynamic "-:".
  std::vector<std::string> not_converted;

  bool quantized() const { return method != QuantMethod::None; }
  // Whether the config excludes module `name` (e.g. "model.layers.0.mlp.gate") from quantisation, by the
  // method's own matching rule.
  bool excludes(const std::string& name) const;
  // compressed-tensors: the scheme whose targets match a linear module `name`, or null.
  const CtScheme* scheme_for(const std::string& name) const;
};

// Reads root["quantization_config"] (absent: method None). Throws FormatError naming the file and
// key for an unknown quant_method, a bits value or format it cannot read, or contradictory keys.
QuantConfig parse_quant_config(const std::string& json_text, const std::string& source);

}  // namespace opchain
