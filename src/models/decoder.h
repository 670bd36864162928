#pragma once
// The decoder-only transformer that Llama, Qwen2, Qwen3 and their MoE variants share. Each
// architecture file (llama.cpp, qwen2.cpp, qwen3.cpp, qwen3_moe.cpp, qwen2_moe.cpp) fills a
// DecoderSpec with how it differs; this file turns the spec and the weights into nn modules.
#include <optional>

#include "io/linear_weights.h"
#include "models/causal_lm.h"
#include "models/tensor_parallel_shard.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/fused_moe.h"
#include "nn/linear.h"
#include "nn/moe_router.h"
#include "nn/rms_norm.h"
#include "nn/rotary_embedding.h"
#include "nn/sigmoid_gated_add.h"
#include "nn/silu_and_mul.h"

namespace opchain {

enum class MoeKind { None, Routed, RoutedWithSharedExpert };

struct DecoderSpec {
  MoeKind moe = MoeKind::None;  // which layers are MoE is config.is_moe_layer
};

// Self-attention: q/k/v projections (optional bias), optional per-head q/k RMSNorm before RoPE.
struct DecoderAttention {
  DecoderAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w);
  DecoderAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                   const HeadShard& heads);
  Tensor forward(StepContext& ctx, const Tensor& x, const nn::RotaryEmbedding::CosSin& rope,
                 const LayerKvCache& cache) const;

  int64_t heads, kv_heads, head_dim;  // this rank's (Note [Tensor parallel])
  nn::Linear q_proj, k_proj, v_proj, o_proj;
  std::optional<nn::RMSNorm> q_norm, k_norm;
  nn::ApplyRotaryEmb rotary;
  nn::Attention attn;
};

// Dense gated MLP: down(silu(gate(x)) * up(x)), gate and up stacked into one projection at load.
struct DenseMlp {
  DenseMlp(const nn::ModuleContext& mc, const WeightStore& w, int64_t hidden, int64_t intermediate);
  Tensor forward(StepContext& ctx, const Tensor& x) const;

  nn::Linear gate_up_proj, down_proj;
  nn::SiluAndMul act;
};

// Sparse MoE block: router linear + top-k selection + experts, plus Qwen2-MoE's gated shared expert.
struct SparseMoeBlock {
  SparseMoeBlock(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, bool shared_expert);
  Tensor forward(StepContext& ctx, const Tensor& x) const;

  nn::Linear gate;
  nn::MoeRouter router;
  nn::FusedMoE experts;
  std::optional<DenseMlp> shared_expert;
  std::optional<nn::Linear> shared_expert_gate;
  std::optional<nn::SigmoidGatedAdd> shared_add;
};

struct DecoderLayer {
  DecoderLayer(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const DecoderSpec& spec,
               int64_t layer);
  nn::RMSNorm input_layernorm;
  DecoderAttention self_attn;
  nn::RMSNorm post_attention_layernorm;
  std::optional<DenseMlp> mlp;
  std::optional<SparseMoeBlock> moe;
};

// Every layer of a decoder-only model ends with norm(h) @ lm_head over the rows that need logits
// (ctx.logits_rows); shared by DecoderModel and HybridDecoderModel.
Tensor compute_logits(StepContext& ctx, const Tensor& hidden, const nn::Linear& lm_head);
// The expert weights of one MoE layer under `prefix` (".experts"): per-expert tensors
// (experts.E.{gate,up,down}_proj.weight) or the fused ones (experts.gate_up_proj [E, 2I, H],
// experts.down_proj [E, H, I]), as views either way.
// Expert parallel: only experts [block.first, block.second) (all when block is {0, 0}). Tensor
// parallel without expert parallel (inter_tp not whole): every expert, but only the rank's block of
// the intermediate features (gate/up rows, down columns), as vLLM splits experts when EP is off.
ExpertWeights load_experts(const std::string& prefix, const ModelConfig& c, const WeightStore& w,
                           std::pair<int64_t, int64_t> block = {0, 0}, const TpShard& inter_tp = {});
// Whether the output projection is the embedding matrix: tied, and no lm_head tensor of any format.
bool lm_head_is_embedding(const ModelConfig& c, const WeightStore& w);
// The output projection: lm_head.weight, or the embedding matrix when tied and absent.
Weight lm_head_weight(const ModelConfig& c, const WeightStore& w, const std::string& embed_name);
// lm_head as this rank builds it: whole, or its block of the vocabulary with the gather (Note [Tensor parallel]).
nn::Linear vocab_parallel_lm_head(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                                  const std::string& embed_name);

class DecoderModel final : public CausalLM {
 public:
  DecoderModel(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev, const BuildProgress& progress,
               const DecoderSpec& spec);
  Tensor forward(StepContext& ctx, const std::vector<LayerKvCache>& cache) const override;
  std::string graph_capture_blocker() const override { return rotary_emb_.graph_capture_blocker(); }

 private:
  nn::Embedding embed_tokens_;
  nn::RotaryEmbedding rotary_emb_;
  std::vector<std::unique_ptr<DecoderLayer>> layers_;
  nn::RMSNorm norm_;
  nn::Linear lm_head_;
};

}  // namespace opchain
