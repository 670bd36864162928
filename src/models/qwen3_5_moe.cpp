// Qwen3.5-MoE: the hybrid decoder with flat linear-attention projections and fused expert tensors,
// every layer MoE with a shared expert; also its hub layout (weights under model.language_model.,
// vision tower and MTP head skipped).
#include "models/hybrid_decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen3_5_moe(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                            const BuildProgress& progress) {
  return std::make_unique<HybridDecoderModel>(c, w, dev, progress);
}

}  // namespace opchain
