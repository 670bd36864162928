#pragma once
// A Hugging Face model directory opened for inference: config, memory-mapped weights, the built model.
#include <memory>
#include <string>

#include "backends/ops_backend.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "models/causal_lm.h"

namespace opchain {

struct LoadedModel {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<WeightStore> weights;
  DeviceContext device;
  std::unique_ptr<CausalLM> model;
  double load_seconds = 0;
};

// Throws FormatError / UnsupportedOpError with the file, tensor or op named.
LoadedModel load_model(const std::string& dir, const std::string& vendor, const BuildProgress& progress = {});

}  // namespace opchain
