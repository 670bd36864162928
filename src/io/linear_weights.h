#pragma once
// A linear layer's weight as the checkpoint has it: the dense `<module>.weight`, or, under config.json's
// quantization_config, the format's tensors (fp8 blocks, GPTQ, AWQ, compressed-tensors), converted once
// into the canonical form of Note [Quantised weights]. Which tensors each format writes, and the rules
// checked here, with their sources: docs/quantization.md. Every error names the tensor and the rule.
#include <string>
#include <utility>
#include <vector>

#include "core/quant.h"
#include "io/safetensors.h"

namespace opchain {

// `module` is the layer's name without a suffix ("model.layers.0.self_attn.q_proj"); out x in is the
// shape the model expects.
Weight load_linear(const WeightStore& w, const std::string& module, int64_t out, int64_t in);

// Row ranges of one layer (a gated q_proj's query rows, Qwen3-Next's regrouped projections).
Weight load_linear_rows(const WeightStore& w, const std::string& module, int64_t out, int64_t in,
                        const std::vector<WeightStore::RowRange>& ranges);

// Several layers' rows one after another (gate_proj over up_proj); all quantised alike or all dense.
Weight load_linear_stacked(const WeightStore& w, const std::vector<std::string>& modules,
                           const std::vector<std::pair<int64_t, int64_t>>& shapes);

// The experts of a fused tensor `name` [experts, rows, cols] (Qwen3.5's experts.gate_up_proj and
// experts.down_proj): a view per expert when dense; fp8 with `<name>_scale_inv`
// [experts, ceil(rows / block_n), ceil(cols / block_k)] when the checkpoint is block fp8.
std::vector<Weight> load_fused_experts(const WeightStore& w, const std::string& name, int64_t experts, int64_t rows,
                                       int64_t cols);

// The model parameters tensor `name` holds: its elements, eight per int32 word of packed int4 codes
// (GPTQ / AWQ qweight, compressed-tensors weight_packed), none for quantisation parameters (scales, zero
// points, group maps).
int64_t parameter_count(const WeightStore& w, const std::string& name);

// What the checkpoint's weights are, for logs: "bf16", or "gptq (int4 group 128) over bf16".
std::string describe_weights(const WeightStore& w);

}  // namespace opchain
