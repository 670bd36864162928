// Qwen3-Next: the hybrid decoder with per-key-head grouped linear-attention projections, MoE layers
// with a shared expert, and dense layers by decoder_sparse_step / mlp_only_layers.
#include "models/hybrid_decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen3_next(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                           const BuildProgress& progress) {
  return std::make_unique<HybridDecoderModel>(c, w, dev, progress);
}

}  // namespace opchain
