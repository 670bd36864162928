#pragma once
// One builder per architecture file; model_registry.cpp maps Hugging Face architecture names to them.
#include "models/causal_lm.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen3_moe(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                          const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen3(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                      const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen2(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                      const BuildProgress&);
std::unique_ptr<CausalLM> build_llama(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                      const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen2_moe(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                          const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen3_next(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                           const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen3_5_moe(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                            const BuildProgress&);
std::unique_ptr<CausalLM> build_qwen3_5(const ModelConfig&, const WeightStore&, const DeviceContext&,
                                        const BuildProgress&);

}  // namespace opchain
