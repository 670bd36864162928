#include <map>

#include "core/error.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_model(const ModelConfig& config, const WeightStore& weights,
                                      const DeviceContext& device, const BuildProgress& progress) {
  static const std::map<std::string, ModelBuilder> builders = {
      {"Qwen3MoeForCausalLM", build_qwen3_moe},
      {"Qwen3ForCausalLM", build_qwen3},
      {"Qwen2ForCausalLM", build_qwen2},
      {"LlamaForCausalLM", build_llama},
      {"Qwen2MoeForCausalLM", build_qwen2_moe},
      {"Qwen3NextForCausalLM", build_qwen3_next},
      {"Qwen3_5MoeForCausalLM", build_qwen3_5_moe},
      {"Qwen3_5MoeForConditionalGeneration", build_qwen3_5_moe},
      {"Qwen3_5ForCausalLM", build_qwen3_5},
      {"Qwen3_5ForConditionalGeneration", build_qwen3_5},
  };
  auto it = builders.find(config.architecture);
  if (it == builders.end()) {
    std::string known;
    for (const auto& [name, b] : builders) known += (known.empty() ? "" : ", ") + name;
    throw FormatError(config.source + ": unknown architecture '" + config.architecture + "'; supported: " + known);
  }
  return it->second(config, weights, device, progress);
}

}  // namespace opchain
