#pragma once
// The parts of a Hugging Face config.json that the supported architectures read, with transformers'
// defaults and derivations (head_dim, MoE layer placement, rope scaling).
#include <optional>
#include <string>
#include <vector>

#include "core/rope_scaling.h"

namespace opchain {

// The token mixer of a decoder layer. Hybrid decoders (Qwen3-Next, Qwen3.5) interleave Gated DeltaNet
// linear-attention layers with gated full-attention layers.
enum class LayerKind : uint8_t { FullAttention, LinearAttention };

// Gated DeltaNet sizes (config keys linear_*): nk key heads of dk, nv value heads of dv (nv a multiple
// of nk: value head h reads key head h / (nv / nk)), and the causal conv's kernel width.
struct LinearAttentionConfig {
  int64_t num_key_heads = 0;
  int64_t num_value_heads = 0;
  int64_t key_head_dim = 0;
  int64_t value_head_dim = 0;
  int64_t conv_kernel = 0;
  int64_t key_dim() const { return num_key_heads * key_head_dim; }
  int64_t value_dim() const { return num_value_heads * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // channels [q | k | v]
};

struct ModelConfig {
  std::string architecture;  // e.g. "Qwen3MoeForCausalLM"
  std::string model_type;
  std::string source;  // path of config.json, for errors
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v/o bias (Llama); Qwen2 always has q/k/v bias and no o bias
  bool qkv_bias = false;
  bool o_bias = false;
  bool qk_norm = false;  // Qwen3: per-head RMSNorm on q and k
  std::string hidden_act = "silu";
  // MoE
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  int64_t router_n_groups = 0;  // grouped top-k (0 = off)
  int64_t router_topk_groups = 0;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id;
  // Channels of each head that RoPE rotates: head_dim, or head_dim * partial_rotary_factor.
  int64_t rotary_dim = 0;
  // Hybrid decoders (Qwen3-Next, Qwen3.5): the kind of every layer (empty: all full attention), the
  // linear-attention sizes, and the traits their full-attention layers and norms share.
  std::vector<LayerKind> layer_types;
  LinearAttentionConfig linear;
  bool attn_output_gate = false;     // q_proj yields, per head, the query then a sigmoid gate on the output
  bool zero_centered_norms = false;  // RMSNorm weights are stored as w - 1: out = norm(x) * (1 + w)
  bool grouped_qkvz = false;         // Qwen3-Next: in_proj_qkvz / in_proj_ba are grouped per key head
  // Where the text model's tensors live: "model." or, in Qwen3.5's hub layout, "model.language_model.".
  std::string weight_prefix = "model.";

  // transformers' rule: MoE when not in mlp_only_layers and (layer+1) % decoder_sparse_step == 0.
  bool is_moe_layer(int64_t layer) const;
  bool is_hybrid() const { return !layer_types.empty(); }
  bool is_linear_attention(int64_t layer) const {
    return is_hybrid() && layer_types[static_cast<size_t>(layer)] == LayerKind::LinearAttention;
  }
  int64_t num_linear_attention_layers() const;
  int64_t num_full_attention_layers() const { return num_hidden_layers - num_linear_attention_layers(); }
};

// Reads <dir>/config.json; throws FormatError naming the file and field, or for an unknown architecture.
struct ModelDirectory;
// config.json of a model directory (Note [Model directory]); the string form reads the directory first.
ModelConfig load_model_config(const ModelDirectory& dir);
ModelConfig load_model_config(const std::string& model_dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
const std::vector<std::string>& supported_architectures();

}  // namespace opchain
