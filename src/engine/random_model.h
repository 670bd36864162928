#pragma once
// Random-weight Hugging Face model directories of real architectures (Qwen3-30B-A3B, Qwen3-4B, ...) at
// any depth, for benchmarks and loader tests without downloading checkpoints. The weights are scaled so
// activations stay finite over any number of layers; they carry no meaning.
#include <cstdint>
#include <string>
#include <vector>

#include <optional>
#include "core/dtype.h"

#include "io/quant_writer.h"
#include "io/safetensors_writer.h"

namespace opchain {

// Names of the presets write_random_model accepts.
const std::vector<std::string>& random_model_presets();

struct RandomModelOptions {
  std::string preset;
  int64_t layers = 0;         // 0: the preset's full depth
  DType dtype = DType::BF16;  // bf16 or f32, for every tensor
  uint64_t seed = 0;
  std::string out_dir;        // created when missing
  std::string tokenizer_dir;  // tokenizer.json and tokenizer_config.json are copied from here; empty: none
  size_t max_shard_bytes = size_t{4096} << 20;  // 0: always a single model.safetensors
  int64_t vocab_size = 0;                       // overrides the preset's vocabulary (small test models); 0: keep it
  // Written straight into this quantised format (engine/quantize_model.h), so a large preset's dense copy
  // never has to exist: the same weights `opchain quantize` would make of the dense model.
  std::optional<QuantFormatOptions> quantize;
};

struct RandomModelResult {
  std::vector<std::string> weight_files;  // inside out_dir
  size_t weight_bytes = 0;
  int64_t parameters = 0;
  int64_t quantized_layers = 0, dense_layers = 0;  // with `quantize`
  double seconds = 0;
};

// The complete config.json (as transformers writes it) of a preset at `layers` depth.
// Throws InvalidArgumentError naming the presets when `preset` is unknown.
std::string random_model_config_json(const std::string& preset, int64_t layers, DType dtype, int64_t vocab_size = 0);

// Writes config.json, generation_config.json, the weights (streamed, sharded past max_shard_bytes) and
// the tokenizer files. A tensor's values depend only on the seed and its name, so the same seed gives
// the same weights whatever the depth, sharding or thread count. Stale weight files of an earlier model
// in out_dir (model.safetensors, model-*-of-*.safetensors, the index) are removed first, since a
// leftover index would shadow the new single file.
RandomModelResult write_random_model(const RandomModelOptions& options);

}  // namespace opchain
