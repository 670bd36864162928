#include "engine/loaded_model.h"

#include <chrono>

namespace opchain {

LoadedModel load_model(const std::string& dir, const std::string& vendor, const BuildProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel m;
  m.dir = dir;
  m.config = load_model_config(dir);
  m.weights = std::make_unique<WeightStore>(dir);
  m.device.vendor = vendor;
  m.model = build_model(m.config, *m.weights, m.device, progress);
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace opchain
