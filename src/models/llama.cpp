// Llama: optional attention_bias; rope_scaling none, linear, dynamic, yarn or llama3.
#include "models/decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_llama(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                      const BuildProgress& progress) {
  return std::make_unique<DecoderModel>(c, w, dev, progress, DecoderSpec{MoeKind::None});
}

}  // namespace opchain
