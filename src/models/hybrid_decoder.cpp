#include "models/hybrid_decoder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace opchain {

namespace {

using RowRanges = std::vector<WeightStore::RowRange>;

std::string root_of(const ModelConfig& c) { return c.weight_prefix.substr(0, c.weight_prefix.size() - 1); }

Tensor optional_rows(const WeightStore& w, const std::string& name, bool present, int64_t n, const RowRanges& ranges) {
  if (!present) return {};
  return w.get_rows(name, {n}, ranges);
}

Tensor optional_bias(const WeightStore& w, const std::string& name, bool present, int64_t n) {
  if (!present) return {};
  return w.get(name, {n});
}

// q_proj's rows are per head [query (d) | gate (d)]; these pick one half of heads [begin, begin + heads).
RowRanges per_head_half(int64_t begin, int64_t heads, int64_t d, bool gate) {
  RowRanges r;
  for (int64_t h = begin; h < begin + heads; ++h)
    r.push_back({h * 2 * d + (gate ? d : 0), h * 2 * d + (gate ? 2 * d : d)});
  return r;
}

Tensor bias_rows(const Tensor& bias, const TpShard& tp, int64_t begin, int64_t end) {
  if (bias.is_null() || tp.whole()) return bias;
  return bias.slice_rows(begin, end);
}

GdnShard gdn_shard(const LinearAttentionConfig& l, const TpShard& tp, const std::string& where) {
  const int64_t nk = l.num_key_heads, nv = l.num_value_heads, r = nv / nk;
  const auto [vb, ve] = even_block(nv, tp, "linear-attention value heads of " + where);
  if (nk % tp.size == 0) return {vb / r, ve / r, vb, ve, r};
  if (tp.size % nk == 0) return {vb / r, vb / r + 1, vb, ve, r};  // ve <= (vb / r + 1) r: one key head's
  throw FormatError("tensor parallel size " + std::to_string(tp.size) + " neither divides nor is a multiple of the " +
                    std::to_string(nk) + " linear-attention key heads of " + where);
}

LinearAttentionConfig local_dims(LinearAttentionConfig l, const GdnShard& s) {
  l.num_key_heads = s.k_end - s.k_begin;
  l.num_value_heads = s.v_end - s.v_begin;
  return l;
}

// The flat [q | k | v] rows (the conv's channels) of the shard's heads.
RowRanges qkv_flat_rows(const LinearAttentionConfig& l, const GdnShard& s) {
  const int64_t dk = l.key_head_dim, dv = l.value_head_dim, kd = l.key_dim();
  return {{s.k_begin * dk, s.k_end * dk},
          {kd + s.k_begin * dk, kd + s.k_end * dk},
          {2 * kd + s.v_begin * dv, 2 * kd + s.v_end * dv}};
}

// The shard's value heads among key head j's r: [lo, hi) counted from j's first, empty when none.
std::pair<int64_t, int64_t> value_heads_of(const GdnShard& s, int64_t j) {
  const int64_t lo = std::max(s.v_begin, j * s.r), hi = std::min(s.v_end, (j + 1) * s.r);
  return {lo - j * s.r, std::max(lo, hi) - j * s.r};
}

// Qwen3-Next's in_proj_qkvz is grouped per key head j: [q_j (dk) | k_j (dk) | v_j (r*dv) | z_j (r*dv)].
// Flat order is all q heads, all k heads, all v heads (the conv's channels), then all z heads.
// The shard's heads only, in the same order.
RowRanges qkvz_flat_order(const LinearAttentionConfig& l, const GdnShard& s, bool z) {
  const int64_t dk = l.key_head_dim, dv = l.value_head_dim, vw = s.r * dv;
  const int64_t group = 2 * dk + 2 * vw;
  RowRanges out;
  const auto values = [&](int64_t j, int64_t at) {  // the shard's value (or z) heads of key head j
    const auto [lo, hi] = value_heads_of(s, j);
    out.push_back({j * group + at + lo * dv, j * group + at + hi * dv});
  };
  if (z) {
    for (int64_t j = s.k_begin; j < s.k_end; ++j) values(j, 2 * dk + vw);
    return out;
  }
  for (int64_t j = s.k_begin; j < s.k_end; ++j) out.push_back({j * group, j * group + dk});
  for (int64_t j = s.k_begin; j < s.k_end; ++j) out.push_back({j * group + dk, j * group + 2 * dk});
  for (int64_t j = s.k_begin; j < s.k_end; ++j) values(j, 2 * dk);
  return out;
}

// Qwen3-Next's in_proj_ba is grouped per key head j: [b_j (r) | a_j (r)]; flat is all b, then all a.
RowRanges ba_flat_order(const GdnShard& s) {
  const int64_t r = s.r;
  RowRanges out;
  for (int64_t half : {int64_t{0}, r})  // b, then a
    for (int64_t j = s.k_begin; j < s.k_end; ++j) {
      const auto [lo, hi] = value_heads_of(s, j);
      out.push_back({j * 2 * r + half + lo, j * 2 * r + half + hi});
    }
  return out;
}

Weight qkv_weight(const std::string& p, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                  const GdnShard& s) {
  const LinearAttentionConfig& l = c.linear;
  if (c.grouped_qkvz)
    return load_linear_rows(w, p + ".in_proj_qkvz", l.conv_dim() + l.value_dim(), c.hidden_size,
                            qkvz_flat_order(l, s, false));
  const Weight full = load_linear(w, p + ".in_proj_qkv", l.conv_dim(), c.hidden_size);
  return tp.whole() ? full : select_rows(full, qkv_flat_rows(l, s));
}

Weight z_weight(const std::string& p, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                const GdnShard& s) {
  const LinearAttentionConfig& l = c.linear;
  if (c.grouped_qkvz)
    return load_linear_rows(w, p + ".in_proj_qkvz", l.conv_dim() + l.value_dim(), c.hidden_size,
                            qkvz_flat_order(l, s, true));
  return shard_rows(load_linear(w, p + ".in_proj_z", l.value_dim(), c.hidden_size), tp, {s.v_begin, s.v_end},
                    l.value_head_dim);
}

// b's rows over a's, the shard's value heads of each.
Weight ba_weight(const std::string& p, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                 const GdnShard& s) {
  const int64_t nv = c.linear.num_value_heads;
  if (c.grouped_qkvz) return load_linear_rows(w, p + ".in_proj_ba", 2 * nv, c.hidden_size, ba_flat_order(s));
  const Weight full =
      load_linear_stacked(w, {p + ".in_proj_b", p + ".in_proj_a"}, {{nv, c.hidden_size}, {nv, c.hidden_size}});
  if (tp.whole()) return full;
  return select_rows(full, {{s.v_begin, s.v_end}, {nv + s.v_begin, nv + s.v_end}});
}

// A per-value-head vector (A_log, dt_bias): the shard's heads.
Tensor value_head_rows(const WeightStore& w, const std::string& name, int64_t nv, const GdnShard& s) {
  return w.get_rows(name, {nv}, {{s.v_begin, s.v_end}});
}

}  // namespace

GatedAttention::GatedAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w)
    : GatedAttention(mc, c, w, tp_shard(*mc.device),
                     shard_heads(c.num_attention_heads, c.num_key_value_heads, tp_shard(*mc.device), mc.path)) {}

// Tensor parallel as DecoderAttention: this rank's heads' query and gate rows, its KV heads' k/v rows,
// o_proj's matching input columns and an all-reduce (its bias added once, on tp rank 0).
GatedAttention::GatedAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                               const TpShard& tp, const HeadShard& hs)
    : heads(hs.heads),
      kv_heads(hs.kv_heads),
      head_dim(c.head_dim),
      q_proj(mc.child("q_proj"),
             load_linear_rows(w, mc.path + ".q_proj", 2 * c.num_attention_heads * head_dim, c.hidden_size,
                              per_head_half(hs.q_begin, heads, head_dim, false)),
             optional_rows(w, mc.path + ".q_proj.bias", c.qkv_bias, 2 * c.num_attention_heads * head_dim,
                           per_head_half(hs.q_begin, heads, head_dim, false))),
      gate_proj(mc.child("q_proj.gate"),
                load_linear_rows(w, mc.path + ".q_proj", 2 * c.num_attention_heads * head_dim, c.hidden_size,
                                 per_head_half(hs.q_begin, heads, head_dim, true)),
                optional_rows(w, mc.path + ".q_proj.bias", c.qkv_bias, 2 * c.num_attention_heads * head_dim,
                              per_head_half(hs.q_begin, heads, head_dim, true))),
      k_proj(mc.child("k_proj"),
             shard_rows(load_linear(w, mc.path + ".k_proj", c.num_key_value_heads * head_dim, c.hidden_size), tp,
                        {hs.kv_begin, hs.kv_begin + kv_heads}, head_dim),
             bias_rows(optional_bias(w, mc.path + ".k_proj.bias", c.qkv_bias, c.num_key_value_heads * head_dim), tp,
                       hs.kv_begin * head_dim, (hs.kv_begin + kv_heads) * head_dim)),
      v_proj(mc.child("v_proj"),
             shard_rows(load_linear(w, mc.path + ".v_proj", c.num_key_value_heads * head_dim, c.hidden_size), tp,
                        {hs.kv_begin, hs.kv_begin + kv_heads}, head_dim),
             bias_rows(optional_bias(w, mc.path + ".v_proj.bias", c.qkv_bias, c.num_key_value_heads * head_dim), tp,
                       hs.kv_begin * head_dim, (hs.kv_begin + kv_heads) * head_dim)),
      o_proj(mc.child("o_proj"),
             shard_cols(load_linear(w, mc.path + ".o_proj", c.hidden_size, c.num_attention_heads * head_dim), tp,
                        {hs.q_begin, hs.q_begin + heads}, head_dim),
             tp.rank == 0 ? optional_bias(w, mc.path + ".o_proj.bias", c.o_bias, c.hidden_size) : Tensor{},
             tp.whole() ? nn::LinearParallel{} : nn::LinearParallel{nn::LinearParallel::ReduceOutput}),
      q_norm(mc.child("q_norm"), w.get(mc.path + ".q_norm.weight", {head_dim}), static_cast<float>(c.rms_norm_eps)),
      k_norm(mc.child("k_norm"), w.get(mc.path + ".k_norm.weight", {head_dim}), static_cast<float>(c.rms_norm_eps)),
      rotary(mc.child("rotary")),
      attn(mc.child("attn"), heads, kv_heads, head_dim,
           static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))),
      output_gate(mc.child("output_gate")) {}

Tensor GatedAttention::forward(StepContext& ctx, const Tensor& x, const nn::RotaryEmbedding::CosSin& rope,
                               const LayerKvCache& cache) const {
  const int64_t n = x.size(0);
  Tensor q = q_norm.forward(ctx, q_proj.forward(ctx, x).reshape({n, heads, head_dim}));
  Tensor gate = gate_proj.forward(ctx, x);
  Tensor k = k_norm.forward(ctx, k_proj.forward(ctx, x).reshape({n, kv_heads, head_dim}));
  Tensor v = v_proj.forward(ctx, x);
  rotary.forward(q, k, rope);  // the first rotary_dim channels of each head (partial RoPE)
  Tensor o =
      attn.forward(ctx, q.reshape({n, heads * head_dim}), k.reshape({n, kv_heads * head_dim}), v, cache.k, cache.v);
  output_gate.forward(gate, o);
  return o_proj.forward(ctx, o);
}

GatedDeltaNet::GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w)
    : GatedDeltaNet(mc, c, w, tp_shard(*mc.device)) {}

GatedDeltaNet::GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp)
    : GatedDeltaNet(mc, c, w, tp, gdn_shard(c.linear, tp, mc.path)) {}

GatedDeltaNet::GatedDeltaNet(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, const TpShard& tp,
                             const GdnShard& s)
    : dims(local_dims(c.linear, s)),
      in_proj_qkv(mc.child("in_proj_qkv"), qkv_weight(mc.path, c, w, tp, s)),
      in_proj_z(mc.child("in_proj_z"), z_weight(mc.path, c, w, tp, s)),
      in_proj_ba(mc.child("in_proj_ba"), ba_weight(mc.path, c, w, tp, s)),
      out_proj(mc.child("out_proj"),
               shard_cols(load_linear(w, mc.path + ".out_proj", c.hidden_size, c.linear.value_dim()), tp,
                          {s.v_begin, s.v_end}, c.linear.value_head_dim),
               Tensor{}, tp.whole() ? nn::LinearParallel{} : nn::LinearParallel{nn::LinearParallel::ReduceOutput}),
      conv1d(mc.child("conv1d"),
             tp.whole() ? w.get(mc.path + ".conv1d.weight", {dims.conv_dim(), 1, dims.conv_kernel})
                        : w.get_rows(mc.path + ".conv1d.weight", {c.linear.conv_dim(), 1, dims.conv_kernel},
                                     qkv_flat_rows(c.linear, s))),
      qk_norm(mc.child("qk_l2norm"), 2 * dims.num_key_heads, dims.key_head_dim),
      gating(mc.child("gating"), value_head_rows(w, mc.path + ".A_log", c.linear.num_value_heads, s),
             value_head_rows(w, mc.path + ".dt_bias", c.linear.num_value_heads, s)),
      delta_rule(mc.child("delta_rule"), dims.num_key_heads,
                 static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.key_head_dim)))),
      norm(mc.child("norm"), w.get(mc.path + ".norm.weight", {dims.value_head_dim}),
           static_cast<float>(c.rms_norm_eps)) {}

Tensor GatedDeltaNet::forward(StepContext& ctx, const Tensor& x, const LayerKvCache& cache) const {
  Tensor qkv = conv1d.forward(ctx, in_proj_qkv.forward(ctx, x), cache.conv_state);
  qk_norm.forward(qkv);  // q and k heads, in place; v untouched
  const auto gates = gating.forward(ctx, in_proj_ba.forward(ctx, x));
  Tensor o = delta_rule.forward(ctx, qkv, gates.g, gates.beta, cache.recurrent_state);
  return out_proj.forward(ctx, norm.forward(ctx, o, in_proj_z.forward(ctx, x)));
}

HybridDecoderLayer::HybridDecoderLayer(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                                       int64_t layer)
    : input_layernorm(mc.child("input_layernorm"), w.get(mc.path + ".input_layernorm.weight", {c.hidden_size}),
                      static_cast<float>(c.rms_norm_eps)),
      post_attention_layernorm(mc.child("post_attention_layernorm"),
                               w.get(mc.path + ".post_attention_layernorm.weight", {c.hidden_size}),
                               static_cast<float>(c.rms_norm_eps)) {
  if (c.is_linear_attention(layer))
    linear_attn.emplace(mc.child("linear_attn"), c, w);
  else
    self_attn.emplace(mc.child("self_attn"), c, w);
  if (c.is_moe_layer(layer))
    moe.emplace(mc.child("mlp"), c, w, /*shared_expert=*/true);
  else
    mlp.emplace(mc.child("mlp"), w, c.hidden_size, c.intermediate_size);
}

HybridDecoderModel::HybridDecoderModel(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                                       const BuildProgress& progress)
    : CausalLM(c),
      root_(root_of(c)),
      embed_tokens_({&dev, root_ + ".embed_tokens"},
                    w.get(root_ + ".embed_tokens.weight", {c.vocab_size, c.hidden_size})),
      rotary_emb_({&dev, root_ + ".rotary_emb"}, c.rotary_dim, c.rope_theta, c.rope_scaling, c.max_position_embeddings),
      norm_({&dev, root_ + ".norm"}, w.get(root_ + ".norm.weight", {c.hidden_size}),
            static_cast<float>(c.rms_norm_eps)),
      lm_head_(vocab_parallel_lm_head({&dev, "lm_head"}, c, w, root_ + ".embed_tokens.weight")) {
  // Decode reads one embedding row per token, and a row first touched mid-step took a page fault (20 us a
  // step on average on Zen 4, 4 us with the table mapped in).
  w.map_in(root_ + ".embed_tokens.weight");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    layers_.push_back(
        std::make_unique<HybridDecoderLayer>(nn::ModuleContext{&dev, root_ + ".layers." + std::to_string(l)}, c, w, l));
    if (progress) progress(l + 1, c.num_hidden_layers);
  }
  // This rank's KV heads and linear-attention heads size its caches (Note [Tensor parallel]).
  for (const auto& layer : layers_) {
    if (layer->self_attn) cache_config_.num_key_value_heads = layer->self_attn->kv_heads;
    if (layer->linear_attn) cache_config_.linear = layer->linear_attn->dims;
  }
  // The text model's parameters: not the vision tower nor the multi-token-prediction head beside it.
  for (const auto& name : w.names())
    if (name.rfind("mtp.", 0) != 0 && name.rfind("model.visual.", 0) != 0)
      parameter_count_ += opchain::parameter_count(w, name);
}

// The pre-norm residual stream of DecoderModel::forward, with a linear-attention or gated
// full-attention mixer per layer and zero-centred norms (Note [Layer arenas] as there).
Tensor HybridDecoderModel::forward(StepContext& ctx, const std::vector<LayerKvCache>& cache) const {
  Tensor residual = embed_tokens_.forward(ctx, ctx.input_ids);
  const auto rope = rotary_emb_.forward(ctx);
  Tensor pending;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const HybridDecoderLayer& layer = *layers_[l];
    ctx.workspace->use_layer_arena(static_cast<int>(l % 2));
    Tensor x = pending.is_null() ? layer.input_layernorm.forward(ctx, residual)
                                 : layer.input_layernorm.forward_add(ctx, pending, residual);
    Tensor mixed = layer.linear_attn ? layer.linear_attn->forward(ctx, x, cache[l])
                                     : layer.self_attn->forward(ctx, x, rope, cache[l]);
    x = layer.post_attention_layernorm.forward_add(ctx, mixed, residual);
    pending = layer.moe ? layer.moe->forward(ctx, x) : layer.mlp->forward(ctx, x);
  }
  ctx.workspace->use_step_arena();  // the logits outlive the forward
  Tensor hidden = pending.is_null() ? norm_.forward(ctx, residual) : norm_.forward_add(ctx, pending, residual);
  return compute_logits(ctx, hidden, lm_head_);
}

}  // namespace opchain
