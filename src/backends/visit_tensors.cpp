#include "backends/visit_tensors.h"

namespace opchain {

namespace {

constexpr bool kIn = false, kOut = true;

void visit(const TensorVisitor& fn, const char* name, const Tensor& t, bool is_output) {
  if (!t.is_null()) fn(name, t, is_output);
}

void visit_attn_meta(const AttnMetadata* m, const TensorVisitor& fn) {
  if (!m) return;
  visit(fn, "meta.q_seqlens", m->q_seqlens, kIn);
  visit(fn, "meta.kv_seqlens", m->kv_seqlens, kIn);
  visit(fn, "meta.q_start_loc", m->q_start_loc, kIn);
  visit(fn, "meta.block_tables", m->block_tables, kIn);
  visit(fn, "meta.slot_mapping", m->slot_mapping, kIn);
  visit(fn, "meta.state_slots", m->state_slots, kIn);
}

void visit_moe_meta(const MoeMetadata* m, const TensorVisitor& fn) {
  if (m) visit(fn, "meta.x_active_mask", m->x_active_mask, kIn);
}

}  // namespace

void visit_tensors(const EmbeddingArgs& a, const TensorVisitor& fn) {
  visit(fn, "ids", a.ids, kIn);
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const LinearArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "bias", a.bias, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const RmsNormArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const AddRmsNormArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "residual", a.residual, kOut);  // x is added into it in place
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const RotaryEmbeddingArgs& a, const TensorVisitor& fn) {
  visit(fn, "positions", a.positions, kIn);
  visit(fn, "inv_freq", a.inv_freq, kIn);
  visit(fn, "cos", a.cos, kOut);
  visit(fn, "sin", a.sin, kOut);
}
void visit_tensors(const ApplyRotaryPosEmbArgs& a, const TensorVisitor& fn) {
  visit(fn, "q", a.q, kOut);
  visit(fn, "k", a.k, kOut);
  visit(fn, "cos", a.cos, kIn);
  visit(fn, "sin", a.sin, kIn);
}
void visit_tensors(const FillKvCacheArgs& a, const TensorVisitor& fn) {
  visit(fn, "k", a.k, kIn);
  visit(fn, "v", a.v, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "k_cache", a.k_cache, kOut);
  visit(fn, "v_cache", a.v_cache, kOut);
}
void visit_tensors(const PrefillAttentionArgs& a, const TensorVisitor& fn) {
  visit(fn, "q", a.q, kIn);
  visit(fn, "k", a.k, kIn);
  visit(fn, "v", a.v, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const PagedPrefillAttentionArgs& a, const TensorVisitor& fn) {
  visit(fn, "q", a.q, kIn);
  visit(fn, "k_cache", a.k_cache, kIn);
  visit(fn, "v_cache", a.v_cache, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const PagedDecodeAttentionArgs& a, const TensorVisitor& fn) {
  visit(fn, "q", a.q, kIn);
  visit(fn, "k_cache", a.k_cache, kIn);
  visit(fn, "v_cache", a.v_cache, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const SiluAndMulArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const MoeGatingTopkSoftmaxArgs& a, const TensorVisitor& fn) {
  visit(fn, "router_logits", a.router_logits, kIn);
  visit_moe_meta(a.meta, fn);
  visit(fn, "topk_weights", a.topk_weights, kOut);
  visit(fn, "topk_ids", a.topk_ids, kOut);
}
void visit_tensors(const FusedMoeArgs& a, const TensorVisitor& fn) {
  visit(fn, "hidden", a.hidden, kIn);
  visit(fn, "topk_weights", a.topk_weights, kIn);
  visit(fn, "topk_ids", a.topk_ids, kIn);
  visit_moe_meta(a.meta, fn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const MoeInitRoutingArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "topk_ids", a.topk_ids, kIn);
  visit_moe_meta(a.meta, fn);
  visit(fn, "x_sorted", a.x_sorted, kOut);
  visit(fn, "expert_offsets", a.expert_offsets, kOut);
  visit(fn, "pair_to_sorted", a.pair_to_sorted, kOut);
}
void visit_tensors(const GroupedMatmulArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "expert_offsets", a.expert_offsets, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const SwigluArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const MoeTokenUnpermuteArgs& a, const TensorVisitor& fn) {
  visit(fn, "expert_out", a.expert_out, kIn);
  visit(fn, "pair_to_sorted", a.pair_to_sorted, kIn);
  visit(fn, "topk_weights", a.topk_weights, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const SigmoidGatedAddArgs& a, const TensorVisitor& fn) {
  visit(fn, "gate", a.gate, kIn);
  visit(fn, "y", a.y, kIn);
  visit(fn, "out", a.out, kOut);  // y, gated, is added into it in place
}

void visit_tensors(const ZeroCenteredRmsNormArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "residual", a.residual, kOut);  // x is added into it in place
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const L2NormArgs& a, const TensorVisitor& fn) { visit(fn, "x", a.x, kOut); }
void visit_tensors(const CausalConv1dArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "weight", a.weight, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "conv_state", a.conv_state, kOut);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const GdnGatingArgs& a, const TensorVisitor& fn) {
  visit(fn, "ba", a.ba, kIn);
  visit(fn, "a_log", a.a_log, kIn);
  visit(fn, "dt_bias", a.dt_bias, kIn);
  visit(fn, "g", a.g, kOut);
  visit(fn, "beta", a.beta, kOut);
}
void visit_tensors(const GatedDeltaRuleArgs& a, const TensorVisitor& fn) {
  visit(fn, "qkv", a.qkv, kIn);
  visit(fn, "g", a.g, kIn);
  visit(fn, "beta", a.beta, kIn);
  visit_attn_meta(a.meta, fn);
  visit(fn, "state", a.state, kOut);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const GatedRmsNormArgs& a, const TensorVisitor& fn) {
  visit(fn, "x", a.x, kIn);
  visit(fn, "z", a.z, kIn);
  visit(fn, "weight", a.weight, kIn);
  visit(fn, "out", a.out, kOut);
}
void visit_tensors(const SigmoidGateMulArgs& a, const TensorVisitor& fn) {
  visit(fn, "gate", a.gate, kIn);
  visit(fn, "x", a.x, kOut);  // gated in place
}

void visit_tensors(OpType op, const void* args, const TensorVisitor& fn) {
  switch (op) {
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol) \
  case OpType::name:                                       \
    visit_tensors(*static_cast<const args_t*>(args), fn);  \
    return;
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
  }
}

}  // namespace opchain
