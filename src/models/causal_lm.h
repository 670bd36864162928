#pragma once
// Layer 1: a causal language model is its config, its weights by Hugging Face name, and a forward
// written as calls to nn modules. Models never name a device, a vendor, a kernel or a registry key.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/safetensors.h"
#include "nn/module.h"

namespace opchain {

// One layer's cache (owned by the engine). A full-attention layer has a paged KV cache, k and v of
// [num_blocks, block_size, kv_heads, head_dim]; a linear-attention layer (Gated DeltaNet) has a state
// pool of per-sequence slots: conv_state [slots, K-1, conv_dim] and recurrent_state [slots, nv, dk, dv].
struct LayerKvCache {
  Tensor k, v;
  Tensor conv_state, recurrent_state;
};

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  // Runs one step; returns f32 logits [ctx.logits_rows.numel(), vocab] in ctx's workspace.
  virtual Tensor forward(StepContext& ctx, const std::vector<LayerKvCache>& cache) const = 0;
  // Optional: why a decode step of this model cannot be captured and replayed (a host-side decision
  // per step, Note [Graph capture]); empty (the default) when it can. Such a model decodes eagerly.
  virtual std::string graph_capture_blocker() const { return {}; }
  const ModelConfig& config() const { return config_; }
  // The config this rank's KV cache is sized by: config() with the KV heads this rank holds, fewer
  // than the checkpoint's when attention is tensor-parallel (Note [Tensor parallel]).
  const ModelConfig& cache_config() const { return cache_config_; }
  int64_t parameter_count() const { return parameter_count_; }

 protected:
  explicit CausalLM(ModelConfig c) : config_(c), cache_config_(std::move(c)) {}
  ModelConfig config_;
  ModelConfig cache_config_;
  int64_t parameter_count_ = 0;
};

// Called as layers are built (done, total), e.g. to draw a progress bar.
using BuildProgress = std::function<void(int64_t done, int64_t total)>;
using ModelBuilder = std::function<std::unique_ptr<CausalLM>(const ModelConfig&, const WeightStore&,
                                                             const DeviceContext&, const BuildProgress&)>;

// Builds the model for config.architecture; throws FormatError for an unknown architecture and for
// missing or mis-shaped tensors, UnsupportedOpError when the vendor lacks a kernel.
std::unique_ptr<CausalLM> build_model(const ModelConfig& config, const WeightStore& weights,
                                      const DeviceContext& device, const BuildProgress& progress = {});

}  // namespace opchain
