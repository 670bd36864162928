// Dense Qwen3.5: the hybrid decoder with a dense MLP in every layer; also its hub layout.
#include "models/hybrid_decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen3_5(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                        const BuildProgress& progress) {
  return std::make_unique<HybridDecoderModel>(c, w, dev, progress);
}

}  // namespace opchain
