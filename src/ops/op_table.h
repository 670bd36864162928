#pragma once
// Note [One op table]
// Every op has exactly one token, used everywhere: the OpType enumerator (layers 2-3), the registry
// key (layer 4), the header src/ops/<key>.h, the kernel files src/vendors/<vendor>/<key>.cpp, the
// test cases and the `opchain ops` row. They all come from OPCHAIN_OP_TABLE below, so a key cannot be
// misspelt in one place only: registration and lookup both go through OpType, and string keys
// (plugins, CLI) are checked against this table.
//
// Columns: OpType enumerator, registry key, Args struct, dispatch dtype (which argument's dtype picks
// the kernel), schema, tolerance (max |diff| / (1 + |ref|) of a vendor kernel vs reference in f32).
// The schema names every field of the Args struct, in the order of its fields() list (Note [Op
// fields] in ops/field.h): `T name` an input, `T! name` updated in place, `T? name` optional, scalars
// and enums attributes, `...Metadata meta` the step metadata read, and after `->` the outputs.
#include <array>
#include <optional>
#include <string_view>

#include "ops/add_rms_norm.h"
#include "ops/apply_rotary_pos_emb.h"
#include "ops/causal_conv1d.h"
#include "ops/embedding.h"
#include "ops/fill_kv_cache.h"
#include "ops/fused_moe.h"
#include "ops/gated_delta_rule.h"
#include "ops/gated_rms_norm.h"
#include "ops/gdn_gating.h"
#include "ops/grouped_matmul.h"
#include "ops/l2_norm.h"
#include "ops/linear.h"
#include "ops/moe_gating_topk_softmax.h"
#include "ops/moe_init_routing.h"
#include "ops/moe_token_unpermute.h"
#include "ops/paged_decode_attention.h"
#include "ops/paged_prefill_attention.h"
#include "ops/prefill_attention.h"
#include "ops/rms_norm.h"
#include "ops/rotary_embedding.h"
#include "ops/sigmoid_gate_mul.h"
#include "ops/sigmoid_gated_add.h"
#include "ops/silu_and_mul.h"
#include "ops/swiglu.h"
#include "ops/zero_centered_rms_norm.h"

#define OPCHAIN_OP_TABLE(X)                                                                                            \
  X(Embedding, embedding, EmbeddingArgs, a.weight.dtype(), "embedding(i32 ids[n], W weight[vocab,h]) -> f32 out[n,h]", \
    0.0)                                                                                                               \
  X(Linear, linear, LinearArgs, a.weight.dtype(),                                                                      \
    "linear(f32 x[n,in], W weight[out,in], W? bias[out], Q? quant, MatmulPrecision precision) -> f32 out[n,out]",      \
    1e-4)                                                                                                              \
  X(RmsNorm, rms_norm, RmsNormArgs, a.weight.dtype(),                                                                  \
    "rms_norm(f32 x[rows,h], W weight[h], float eps) -> f32 out[rows,h]", 1e-5)                                        \
  X(AddRmsNorm, add_rms_norm, AddRmsNormArgs, a.weight.dtype(),                                                        \
    "add_rms_norm(f32 x[n,h], f32! residual[n,h], W weight[h], float eps) -> f32 out[n,h]", 1e-5)                      \
  X(RotaryEmbedding, rotary_embedding, RotaryEmbeddingArgs, a.inv_freq.dtype(),                                        \
    "rotary_embedding(i32 positions[n], f32 inv_freq[d/2], float attention_scaling) -> (f32 cos[n,d/2], f32 "          \
    "sin[n,d/2])",                                                                                                     \
    1e-5)                                                                                                              \
  X(ApplyRotaryPosEmb, apply_rotary_pos_emb, ApplyRotaryPosEmbArgs, a.q.dtype(),                                       \
    "apply_rotary_pos_emb(f32! q[n,hq,d], f32! k[n,hk,d], f32 cos[n,rd/2], f32 sin[n,rd/2])", 1e-5)                    \
  X(FillKvCache, fill_kv_cache, FillKvCacheArgs, a.k_cache.dtype(),                                                    \
    "fill_kv_cache(f32 k[n,hk,d], f32 v[n,hk,d], C! k_cache[blocks,bs,hk,d], C! v_cache[blocks,bs,hk,d], "             \
    "AttnMetadata meta)",                                                                                              \
    0.0)                                                                                                               \
  X(PrefillAttention, prefill_attention, PrefillAttentionArgs, a.q.dtype(),                                            \
    "prefill_attention(f32 q[n,hq,d], f32 k[n,hk,d], f32 v[n,hk,d], float scale, MatmulPrecision precision, "          \
    "AttnMetadata meta) -> f32 out[n,hq,d]",                                                                           \
    1e-4)                                                                                                              \
  X(PagedPrefillAttention, paged_prefill_attention, PagedPrefillAttentionArgs, a.k_cache.dtype(),                      \
    "paged_prefill_attention(f32 q[n,hq,d], C k_cache[blocks,bs,hk,d], C v_cache[blocks,bs,hk,d], float scale, "       \
    "MatmulPrecision precision, AttnMetadata meta) -> f32 out[n,hq,d]",                                                \
    1e-4)                                                                                                              \
  X(PagedDecodeAttention, paged_decode_attention, PagedDecodeAttentionArgs, a.k_cache.dtype(),                         \
    "paged_decode_attention(f32 q[b,hq,d], C k_cache[blocks,bs,hk,d], C v_cache[blocks,bs,hk,d], float scale, "        \
    "AttnMetadata meta) -> f32 out[b,hq,d]",                                                                           \
    1e-4)                                                                                                              \
  X(SiluAndMul, silu_and_mul, SiluAndMulArgs, a.x.dtype(), "silu_and_mul(f32 x[n,2i]) -> f32 out[n,i]", 1e-5)          \
  X(MoeGatingTopkSoftmax, moe_gating_topk_softmax, MoeGatingTopkSoftmaxArgs, a.router_logits.dtype(),                  \
    "moe_gating_topk_softmax(f32 router_logits[n,e], int top_k, bool renormalize, MoeMetadata meta) -> "               \
    "(f32 topk_weights[n,k], i32 topk_ids[n,k])",                                                                      \
    1e-5)                                                                                                              \
  X(FusedMoe, fused_moe, FusedMoeArgs, a.experts->dtype(),                                                             \
    "fused_moe(f32 hidden[n,h], W experts[e](gate[i,h], up[i,h], down[h,i]), f32 topk_weights[n,k], "                  \
    "i32 topk_ids[n,k], MatmulPrecision precision, MoeMetadata meta) -> f32 out[n,h]",                                 \
    1e-4)                                                                                                              \
  X(MoeInitRouting, moe_init_routing, MoeInitRoutingArgs, a.x.dtype(),                                                 \
    "moe_init_routing(f32 x[n,h], i32 topk_ids[n,k], int num_experts, MoeMetadata meta) -> (f32 x_sorted[n*k,h], "     \
    "i32 expert_offsets[e+1], i32 pair_to_sorted[n*k])",                                                               \
    0.0)                                                                                                               \
  X(GroupedMatmul, grouped_matmul, GroupedMatmulArgs, (*a.weights)[0].dtype(),                                         \
    "grouped_matmul(f32 x[m,k], i32 expert_offsets[e+1], W weights[e][n,k], Q? quant[e], int out_col_offset, "         \
    "MatmulPrecision precision) -> f32! out[m,ld]",                                                                    \
    1e-4)                                                                                                              \
  X(Swiglu, swiglu, SwigluArgs, a.x.dtype(), "swiglu(f32 x[m,2i]) -> f32 out[m,i]", 1e-5)                              \
  X(MoeTokenUnpermute, moe_token_unpermute, MoeTokenUnpermuteArgs, a.expert_out.dtype(),                               \
    "moe_token_unpermute(f32 expert_out[n*k,h], i32 pair_to_sorted[n*k], f32 topk_weights[n,k]) -> f32 out[n,h]",      \
    1e-5)                                                                                                              \
  X(SigmoidGatedAdd, sigmoid_gated_add, SigmoidGatedAddArgs, a.y.dtype(),                                              \
    "sigmoid_gated_add(f32 gate[n,1], f32 y[n,h], f32! out[n,h])", 1e-5)                                               \
  X(ZeroCenteredRmsNorm, zero_centered_rms_norm, ZeroCenteredRmsNormArgs, a.weight.dtype(),                            \
    "zero_centered_rms_norm(f32 x[rows,h], f32!? residual[rows,h], W weight[h], float eps) -> f32 out[rows,h]", 1e-5)  \
  X(L2Norm, l2_norm, L2NormArgs, a.x.dtype(), "l2_norm(f32! x[n,w], int heads, int head_dim, float eps)", 1e-5)        \
  X(CausalConv1d, causal_conv1d, CausalConv1dArgs, a.weight.dtype(),                                                   \
    "causal_conv1d(f32 x[n,c], W weight[c,K], f32! conv_state[slots,K-1,c], AttnMetadata meta) -> f32 out[n,c]", 1e-5) \
  X(GdnGating, gdn_gating, GdnGatingArgs, a.a_log.dtype(),                                                             \
    "gdn_gating(f32 ba[n,2nv], W a_log[nv], W dt_bias[nv]) -> (f32 g[n,nv], f32 beta[n,nv])", 1e-5)                    \
  X(GatedDeltaRule, gated_delta_rule, GatedDeltaRuleArgs, a.qkv.dtype(),                                               \
    "gated_delta_rule(f32 qkv[n,2nk*dk+nv*dv], f32 g[n,nv], f32 beta[n,nv], f32! state[slots,nv,dk,dv], "              \
    "int num_k_heads, float scale, DeltaRuleForm form(recurrent|chunked), AttnMetadata meta) -> f32 out[n,nv,dv]",     \
    1e-4)                                                                                                              \
  X(GatedRmsNorm, gated_rms_norm, GatedRmsNormArgs, a.weight.dtype(),                                                  \
    "gated_rms_norm(f32 x[rows,d], f32 z[rows,d], W weight[d], float eps) -> f32 out[rows,d]", 1e-5)                   \
  X(SigmoidGateMul, sigmoid_gate_mul, SigmoidGateMulArgs, a.x.dtype(), "sigmoid_gate_mul(f32 gate[n,m], f32! x[n,m])", \
    1e-5)

namespace opchain {

enum class OpType : uint16_t {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) name,
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
};

inline constexpr size_t kNumOps = 0
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) +1
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
    ;

struct OpInfo {
  OpType type;
  std::string_view name;  // enumerator spelling, e.g. "RmsNorm"
  std::string_view key;   // registry key, e.g. "rms_norm"
  std::string_view schema;
  double tolerance;
};

inline constexpr std::array<OpInfo, kNumOps> kOpTable = {{
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) {OpType::name, #name, #key, schema, tol},
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}};

constexpr const OpInfo& op_info(OpType t) { return kOpTable[static_cast<size_t>(t)]; }
constexpr std::string_view op_key(OpType t) { return op_info(t).key; }
std::optional<OpType> op_type_from_key(std::string_view key);

// OpTraits<Op>::Args and ::Fn: the typed kernel signature of each op; dispatch_dtype(args) picks the kernel.
template <OpType Op>
struct OpTraits;
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol)           \
  template <>                                                         \
  struct OpTraits<OpType::name> {                                     \
    using Args = args_t;                                              \
    using Fn = void (*)(const args_t&);                               \
    static DType dispatch_dtype(const args_t& a) { return dispatch; } \
  };
OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X

}  // namespace opchain
