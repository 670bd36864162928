#pragma once
// The hybrid decoder of Qwen3-Next and Qwen3.5 (docs/hybrid-models.md): Gated DeltaNet linear-attention
// layers interleaved with gated full-attention layers, zero-centred RMSNorms, partial rotary, and an
// MoE block with a sigmoid-gated shared expert (Qwen3-Next, Qwen3.5-MoE) or a dense MLP (Qwen3.5).
// The architecture files (qwen3_next.cpp, qwen3_5.cpp, qwen3_5_moe.cpp) differ only in config
// semantics and checkpoint layout, which the config and the loaders here absorb.
#include <optional>

#include "models/decoder.h"
#include "nn/causal_conv1d.h"
#include "nn/gated_delta_rule.h"
#include "nn/gated_rms_norm.h"
#include "nn/gdn_gating.h"
#include "nn/l2_norm.h"
#include "nn/sigmoid_gate_mul.h"
#include "nn/zero_centered_rms_norm.h"

namespace opchain {

// Full attention with an output gate: q_proj's rows alternate per head between the query and a gate
// (split at load into q_proj and gate_proj); q/k zero-centred norms before partial RoPE; the attention
// output is multiplied by sigmoid(gate) before o_proj.
struct GatedAttention {
  GatedAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w);
  GatedAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                 const HeadShard& heads);
  Tensor forward(StepContext& ctx, const Tensor& x, const nn::RotaryEmbedding::CosSin& rope,
                 const LayerKvCache& cache) const;

  int64_t heads, kv_heads, head_dim;  // this rank's (Note [Tensor parallel])
  nn::Linear q_proj, gate_proj, k_proj, v_proj, o_proj;
  nn::ZeroCenteredRMSNorm q_norm, k_norm;
  nn::ApplyRotaryEmb rotary;
  nn::Attention attn;
  nn::SigmoidGateMul output_gate;
};

// Gated DeltaNet: projections to q|k|v (the conv's channels), z (the output gate), b and a (the
// gates); causal conv + silu; q/k L2 norm; the gated delta rule over the sequence's recurrent state;
// the gated RMSNorm with z; out_proj. Qwen3-Next's per-key-head grouped projections are regrouped
// at load into Qwen3.5's flat layout, so one forward serves both.
// Tensor parallel over a Gated DeltaNet layer (Note [Tensor parallel]): each rank takes a block of value
// heads and the key heads they read (a block of key heads when tp divides them, else the one key head
// its value heads share, replicated, as KV heads are in attention). Its q, k, v, z, b, a rows, conv
// channels, gates and recurrent state are its heads' own, and the layer needs one all-reduce, after
// out_proj.
struct GdnShard {
  int64_t k_begin = 0, k_end = 0;  // key heads
  int64_t v_begin = 0, v_end = 0;  // value heads
  int64_t r = 1;                   // value heads per key head in the checkpoint
};

struct GatedDeltaNet {
  GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w);
  Tensor forward(StepContext& ctx, const Tensor& x, const LayerKvCache& cache) const;

  LinearAttentionConfig dims;  // this rank's heads (Note [Tensor parallel]: a block of key heads each)
  nn::Linear in_proj_qkv, in_proj_z, in_proj_ba, out_proj;
  nn::CausalConv1d conv1d;
  nn::L2Norm qk_norm;
  nn::GdnGating gating;
  nn::GatedDeltaRule delta_rule;
  nn::GatedRMSNorm norm;

 private:
  GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp);
  GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                const GdnShard& s);
};

struct HybridDecoderLayer {
  HybridDecoderLayer(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, int64_t layer);
  nn::ZeroCenteredRMSNorm input_layernorm;
  std::optional<GatedAttention> self_attn;
  std::optional<GatedDeltaNet> linear_attn;
  nn::ZeroCenteredRMSNorm post_attention_layernorm;
  std::optional<DenseMlp> mlp;
  std::optional<SparseMoeBlock> moe;
};

class HybridDecoderModel final : public CausalLM {
 public:
  HybridDecoderModel(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                     const BuildProgress& progress);
  Tensor forward(StepContext& ctx, const std::vector<LayerKvCache>& cache) const override;
  std::string graph_capture_blocker() const override { return rotary_emb_.graph_capture_blocker(); }

 private:
  std::string root_;  // "model" or, in Qwen3.5's hub layout, "model.language_model"
  nn::Embedding embed_tokens_;
  nn::RotaryEmbedding rotary_emb_;
  std::vector<std::unique_ptr<HybridDecoderLayer>> layers_;
  nn::ZeroCenteredRMSNorm norm_;
  nn::Linear lm_head_;
};

}  // namespace opchain
