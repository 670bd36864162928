#include <algorithm>
#include <string>

#include "backends/op_impl.h"

namespace opchain {

static std::string attn_meta(const AttnMetadata* m) {
  if (!m) return "";
  return "is_decoding=" + std::to_string(m->is_decoding) + " batch=" + std::to_string(m->batch_size) +
         " max_q_seqlen=" + std::to_string(m->max_q_seqlen) + " max_kv_seqlen=" + std::to_string(m->max_kv_seqlen) +
         " block_size=" + std::to_string(m->block_size);
}

// The linear-attention ops read the varlen layout and each sequence's state slot.
static std::string state_meta(const AttnMetadata* m) {
  if (!m) return "";
  std::string slots;
  const int64_t shown = std::min<int64_t>(m->batch_size, 8);
  for (int64_t b = 0; b < shown && !m->state_slots.is_null(); ++b)
    slots += (b ? "," : "") + std::to_string(m->state_slots.data<int32_t>()[b]);
  if (m->batch_size > shown) slots += ",...";
  return "is_decoding=" + std::to_string(m->is_decoding) + " batch=" + std::to_string(m->batch_size) +
         " max_q_seqlen=" + std::to_string(m->max_q_seqlen) + " state_slots=[" + slots + "]";
}

static std::string moe_meta(const MoeMetadata* m) {
  if (!m) return "";
  return std::string("comm=") + moe_comm_type_name(m->comm_type) + " ep=" + std::to_string(m->ep_size) +
         " pad=" + std::to_string(m->pad_size) + " router_n_groups=" + std::to_string(m->router_n_groups) +
         " masked_rows=" + std::to_string(m->pad_size);
}

void describe_args(const EmbeddingArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"ids", &a.ids}, {"weight", &a.weight}, {"out", &a.out}});
}
// Shown only where it is not the f32 default (Note [Matmul precision]).
static std::string precision_meta(MatmulPrecision p, const char* sep) {
  return p == MatmulPrecision::F32 ? "" : sep + std::string("precision=") + std::string(matmul_precision_name(p));
}

void describe_args(const LinearArgs& a, std::string& m, std::string& t) {
  m = precision_meta(a.precision, "");
  t = describe_tensors({{"x", &a.x}, {"weight", &a.weight}, {"bias", &a.bias}, {"out", &a.out}});
}
void describe_args(const RmsNormArgs& a, std::string& m, std::string& t) {
  m = "eps=" + std::to_string(a.eps);
  t = describe_tensors({{"x", &a.x}, {"weight", &a.weight}, {"out", &a.out}});
}
void describe_args(const AddRmsNormArgs& a, std::string& m, std::string& t) {
  m = "eps=" + std::to_string(a.eps);
  t = describe_tensors({{"x", &a.x}, {"residual", &a.residual}, {"weight", &a.weight}, {"out", &a.out}});
}
void describe_args(const RotaryEmbeddingArgs& a, std::string& m, std::string& t) {
  m = "attention_scaling=" + std::to_string(a.attention_scaling);
  t = describe_tensors({{"positions", &a.positions}, {"inv_freq", &a.inv_freq}, {"cos", &a.cos}, {"sin", &a.sin}});
}
void describe_args(const ApplyRotaryPosEmbArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"q", &a.q}, {"k", &a.k}, {"cos", &a.cos}, {"sin", &a.sin}});
}
void describe_args(const FillKvCacheArgs& a, std::string& m, std::string& t) {
  m = attn_meta(a.meta);
  t = describe_tensors({{"k", &a.k}, {"v", &a.v}, {"k_cache", &a.k_cache}, {"v_cache", &a.v_cache}});
}
void describe_args(const PrefillAttentionArgs& a, std::string& m, std::string& t) {
  m = attn_meta(a.meta);
  t = describe_tensors({{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"out", &a.out}});
}
void describe_args(const PagedPrefillAttentionArgs& a, std::string& m, std::string& t) {
  m = attn_meta(a.meta);
  t = describe_tensors({{"q", &a.q}, {"k_cache", &a.k_cache}, {"v_cache", &a.v_cache}, {"out", &a.out}});
}
void describe_args(const PagedDecodeAttentionArgs& a, std::string& m, std::string& t) {
  m = attn_meta(a.meta);
  t = describe_tensors({{"q", &a.q}, {"k_cache", &a.k_cache}, {"v_cache", &a.v_cache}, {"out", &a.out}});
}
void describe_args(const SiluAndMulArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"x", &a.x}, {"out", &a.out}});
}
void describe_args(const MoeGatingTopkSoftmaxArgs& a, std::string& m, std::string& t) {
  m = "top_k=" + std::to_string(a.top_k) + " renormalize=" + std::to_string(a.renormalize) + " " + moe_meta(a.meta);
  t = describe_tensors({{"router_logits", &a.router_logits}, {"topk_weights", &a.topk_weights}, {"topk_ids", &a.topk_ids}});
}
void describe_args(const FusedMoeArgs& a, std::string& m, std::string& t) {
  m = moe_meta(a.meta) + precision_meta(a.precision, " ");
  t = describe_tensors({{"hidden", &a.hidden}, {"topk_weights", &a.topk_weights}, {"topk_ids", &a.topk_ids}, {"out", &a.out}});
  if (a.experts && a.experts->num_experts() > 0)
    t += " experts=" + std::to_string(a.experts->num_experts()) + "x(gate,up " + a.experts->gate[0].desc() + ", down " +
         a.experts->down[0].desc() + ")";
}
void describe_args(const MoeInitRoutingArgs& a, std::string& m, std::string& t) {
  m = moe_meta(a.meta);
  t = describe_tensors({{"x", &a.x}, {"topk_ids", &a.topk_ids}, {"x_sorted", &a.x_sorted}});
}
void describe_args(const GroupedMatmulArgs& a, std::string& m, std::string& t) {
  m = precision_meta(a.precision, "");
  t = describe_tensors({{"x", &a.x}, {"out", &a.out}});
}
void describe_args(const SwigluArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"x", &a.x}, {"out", &a.out}});
}
void describe_args(const MoeTokenUnpermuteArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"expert_out", &a.expert_out}, {"topk_weights", &a.topk_weights}, {"out", &a.out}});
}
void describe_args(const SigmoidGatedAddArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"gate", &a.gate}, {"y", &a.y}, {"out", &a.out}});
}

void describe_args(const ZeroCenteredRmsNormArgs& a, std::string& m, std::string& t) {
  m = "eps=" + std::to_string(a.eps);
  t = describe_tensors({{"x", &a.x}, {"residual", &a.residual}, {"weight", &a.weight}, {"out", &a.out}});
}
void describe_args(const L2NormArgs& a, std::string& m, std::string& t) {
  m = "heads=" + std::to_string(a.heads) + " head_dim=" + std::to_string(a.head_dim) + " eps=" + std::to_string(a.eps);
  t = describe_tensors({{"x", &a.x}});
}
void describe_args(const CausalConv1dArgs& a, std::string& m, std::string& t) {
  m = state_meta(a.meta);
  t = describe_tensors({{"x", &a.x}, {"weight", &a.weight}, {"conv_state", &a.conv_state}, {"out", &a.out}});
}
void describe_args(const GdnGatingArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"ba", &a.ba}, {"a_log", &a.a_log}, {"dt_bias", &a.dt_bias}, {"g", &a.g}, {"beta", &a.beta}});
}
void describe_args(const GatedDeltaRuleArgs& a, std::string& m, std::string& t) {
  m = std::string("form=") + delta_rule_form_name(a.form) + " num_k_heads=" + std::to_string(a.num_k_heads) + " " +
      state_meta(a.meta);
  t = describe_tensors({{"qkv", &a.qkv}, {"g", &a.g}, {"beta", &a.beta}, {"state", &a.state}, {"out", &a.out}});
}
void describe_args(const GatedRmsNormArgs& a, std::string& m, std::string& t) {
  m = "eps=" + std::to_string(a.eps);
  t = describe_tensors({{"x", &a.x}, {"z", &a.z}, {"weight", &a.weight}, {"out", &a.out}});
}
void describe_args(const SigmoidGateMulArgs& a, std::string& m, std::string& t) {
  t = describe_tensors({{"gate", &a.gate}, {"x", &a.x}});
}

}  // namespace opchain
