// Qwen3-MoE: q/k RMSNorm, routed experts with a softmax top-k router.
#include "models/decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen3_moe(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                          const BuildProgress& progress) {
  return std::make_unique<DecoderModel>(c, w, dev, progress, DecoderSpec{MoeKind::Routed});
}

}  // namespace opchain
