#pragma once
// `opchain quantize` and `make-model --quantize`: a model's linear layers rewritten, by round to nearest,
// into a published quantised format (io/quant_writer.h), every other tensor copied as it is, and
// config.json given the format's quantization_config. Which layers stay dense: the output projection,
// MoE routers and shared-expert gates (as llm-compressor's and Qwen's recipes leave them), and any
// layer whose shape the format cannot hold; the config lists them all.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/quant_writer.h"
#include "io/safetensors_writer.h"

namespace opchain {

// The tensor of a declaration (any float dtype; views or owning), fetched when the writer needs it.
using SourceTensorFn = std::function<Tensor(const TensorDecl&)>;

struct QuantizedWeights {
  ShardedWriteResult written;
  std::vector<std::string> dense_modules;  // linear layers left dense, for the config's exclusion list
  int64_t quantized_layers = 0;
  nlohmann::json quantization_config;
  bool untied_lm_head = false;  // lm_head written from the tied embedding: the config must untie them
};

// Writes the quantised form of the model whose tensors are `source` into out_dir (sharded like
// write_sharded_safetensors). Fused expert tensors (Qwen3.5's experts.gate_up_proj / down_proj) stay
// fused in fp8-block, as transformers holds them, and are split into per-expert layers for the other
// formats, whose producers quantise per-expert linear modules. `tied_embedding` names the embedding a
// tied checkpoint's output projection reuses ("" when untied): with format.lm_head it is quantised into
// lm_head tensors of their own, and the caller's config must then say the two are untied.
QuantizedWeights write_quantized_weights(const std::string& out_dir, const std::vector<TensorDecl>& source,
                                         const SourceTensorFn& fetch, const QuantFormatOptions& format,
                                         size_t max_shard_bytes, const std::string& tied_embedding = "");

// Sets tie_word_embeddings to false where a Hugging Face config (or its text_config) holds it.
void untie_word_embeddings(nlohmann::json& config);

struct QuantizeModelOptions {
  std::string model_dir, out_dir;
  QuantFormatOptions format;
  size_t max_shard_bytes = size_t{4096} << 20;
};

struct QuantizeModelResult {
  QuantizedWeights weights;
  double seconds = 0;
};

// Reads a dense Hugging Face model directory and writes its quantised copy: weights, config.json with
// quantization_config, and every other file of the directory (tokenizer, generation config) copied.
// Throws InvalidArgumentError / FormatError naming what is wrong (an already quantised model, out_dir
// equal to model_dir, ...).
QuantizeModelResult quantize_model(const QuantizeModelOptions& options);

}  // namespace opchain
