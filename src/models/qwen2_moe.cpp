// Qwen2-MoE: q/k/v bias, routed experts plus a sigmoid-gated shared expert.
#include "models/decoder.h"
#include "models/model_builders.h"

namespace opchain {

std::unique_ptr<CausalLM> build_qwen2_moe(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                          const BuildProgress& progress) {
  return std::make_unique<DecoderModel>(c, w, dev, progress, DecoderSpec{MoeKind::RoutedWithSharedExpert});
}

}  // namespace opchain
