// Qwen2: q/k/v bias, no o bias.
#include "models/decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen2(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                      const BuildProgress& progress) {
  return std::make_unique<DecoderModel>(c, w, dev, progress, DecoderSpec{MoeKind::None});
}

}  // namespace opchain
