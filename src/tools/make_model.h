#pragma once
// `opchain make-model`: a random-weight Hugging Face model directory of a real architecture, for
// benchmarks and loader tests (engine/random_model.h), with the default tokenizer copied in.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "tools/quant_spec.h"

namespace opchain::tools {

struct MakeModelOptions {
  std::string preset;             // random_model_presets()
  std::optional<int64_t> layers;  // decoder layers; unset: the preset's full depth
  std::string dtype = "bf16";     // bf16 or f32
  uint64_t seed = 0;              // a tensor's values depend only on the seed and its name
  std::string out;                // created if missing
  std::string tokenizer_dir;      // empty: find_default_tokenizer_dir()
  int64_t shard_size_mb = 0;      // 0: RandomModelOptions' default
  QuantSpec quant;                // format empty: dense
};

// Writes the directory and one summary line on `log`. Bad options throw InvalidArgumentError.
void run_make_model(const MakeModelOptions& o, std::ostream& log);

}  // namespace opchain::tools
