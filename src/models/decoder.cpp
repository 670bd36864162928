#include "models/decoder.h"

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace opchain {

namespace {

std::string layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer); }

Tensor optional_bias(const WeightStore& w, const std::string& name, bool present, int64_t n) {
  if (!present) return {};
  return w.get(name, {n});
}

}  // namespace

namespace {

Tensor bias_rows(const Tensor& bias, const TpShard& tp, std::pair<int64_t, int64_t> block, int64_t unit) {
  if (bias.is_null() || tp.whole()) return bias;
  return bias.slice_rows(block.first * unit, block.second * unit);
}

}  // namespace

DecoderAttention::DecoderAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w)
    : DecoderAttention(mc, c, w, tp_shard(*mc.device),
                       shard_heads(c.num_attention_heads, c.num_key_value_heads, tp_shard(*mc.device), mc.path)) {}

// Tensor parallel (Note [Tensor parallel]): q/k/v hold this rank's heads' rows, o_proj the matching
// input columns and an all-reduce; its bias is added once, on tp rank 0.
DecoderAttention::DecoderAttention(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                                   const TpShard& tp, const HeadShard& hs)
    : heads(hs.heads),
      kv_heads(hs.kv_heads),
      head_dim(c.head_dim),
      q_proj(mc.child("q_proj"),
             shard_rows(load_linear(w, mc.path + ".q_proj", c.num_attention_heads * head_dim, c.hidden_size), tp,
                        {hs.q_begin, hs.q_begin + hs.heads}, head_dim),
             bias_rows(optional_bias(w, mc.path + ".q_proj.bias", c.qkv_bias, c.num_attention_heads * head_dim), tp,
                       {hs.q_begin, hs.q_begin + hs.heads}, head_dim)),
      k_proj(mc.child("k_proj"),
             shard_rows(load_linear(w, mc.path + ".k_proj", c.num_key_value_heads * head_dim, c.hidden_size), tp,
                        {hs.kv_begin, hs.kv_begin + hs.kv_heads}, head_dim),
             bias_rows(optional_bias(w, mc.path + ".k_proj.bias", c.qkv_bias, c.num_key_value_heads * head_dim), tp,
                       {hs.kv_begin, hs.kv_begin + hs.kv_heads}, head_dim)),
      v_proj(mc.child("v_proj"),
             shard_rows(load_linear(w, mc.path + ".v_proj", c.num_key_value_heads * head_dim, c.hidden_size), tp,
                        {hs.kv_begin, hs.kv_begin + hs.kv_heads}, head_dim),
             bias_rows(optional_bias(w, mc.path + ".v_proj.bias", c.qkv_bias, c.num_key_value_heads * head_dim), tp,
                       {hs.kv_begin, hs.kv_begin + hs.kv_heads}, head_dim)),
      o_proj(mc.child("o_proj"),
             shard_cols(load_linear(w, mc.path + ".o_proj", c.hidden_size, c.num_attention_heads * head_dim), tp,
                        {hs.q_begin, hs.q_begin + hs.heads}, head_dim),
             tp.rank == 0 ? optional_bias(w, mc.path + ".o_proj.bias", c.o_bias, c.hidden_size) : Tensor{},
             tp.whole() ? nn::LinearParallel{} : nn::LinearParallel{nn::LinearParallel::ReduceOutput}),
      rotary(mc.child("rotary")),
      attn(mc.child("attn"), heads, kv_heads, head_dim,
           static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))) {
  if (c.qk_norm) {
    const float eps = static_cast<float>(c.rms_norm_eps);
    q_norm.emplace(mc.child("q_norm"), w.get(mc.path + ".q_norm.weight", {head_dim}), eps);
    k_norm.emplace(mc.child("k_norm"), w.get(mc.path + ".k_norm.weight", {head_dim}), eps);
  }
}

Tensor DecoderAttention::forward(StepContext& ctx, const Tensor& x, const nn::RotaryEmbedding::CosSin& rope,
                                 const LayerKvCache& cache) const {
  const int64_t n = x.size(0);
  Tensor q = q_proj.forward(ctx, x).reshape({n, heads, head_dim});
  Tensor k = k_proj.forward(ctx, x).reshape({n, kv_heads, head_dim});
  Tensor v = v_proj.forward(ctx, x);
  if (q_norm) {  // Qwen3: per-head norm after projection, before RoPE
    q = q_norm->forward(ctx, q);
    k = k_norm->forward(ctx, k);
  }
  rotary.forward(q, k, rope);
  Tensor o =
      attn.forward(ctx, q.reshape({n, heads * head_dim}), k.reshape({n, kv_heads * head_dim}), v, cache.k, cache.v);
  return o_proj.forward(ctx, o);
}

namespace {

// gate_proj's rows over up_proj's, this rank's block of the intermediate features from each.
Weight gate_up_shard(const WeightStore& w, const std::string& path, int64_t hidden, int64_t intermediate,
                     const TpShard& tp) {
  if (tp.whole())
    return load_linear_stacked(w, {path + ".gate_proj", path + ".up_proj"},
                               {{intermediate, hidden}, {intermediate, hidden}});
  const auto block = even_block(intermediate, tp, "intermediate features of " + path);
  return stack_rows({shard_rows(load_linear(w, path + ".gate_proj", intermediate, hidden), tp, block, 1),
                     shard_rows(load_linear(w, path + ".up_proj", intermediate, hidden), tp, block, 1)});
}

}  // namespace

DenseMlp::DenseMlp(const nn::ModuleContext& mc, const WeightStore& w, int64_t hidden, int64_t intermediate)
    : gate_up_proj(mc.child("gate_up_proj"), gate_up_shard(w, mc.path, hidden, intermediate, tp_shard(*mc.device))),
      down_proj(
          mc.child("down_proj"),
          shard_cols(load_linear(w, mc.path + ".down_proj", hidden, intermediate), tp_shard(*mc.device),
                     tp_shard(*mc.device).whole()
                         ? std::pair<int64_t, int64_t>{0, intermediate}
                         : even_block(intermediate, tp_shard(*mc.device), "intermediate features of " + mc.path),
                     1),
          {},
          tp_shard(*mc.device).whole() ? nn::LinearParallel{} : nn::LinearParallel{nn::LinearParallel::ReduceOutput}),
      act(mc.child("act_fn")) {}

Tensor DenseMlp::forward(StepContext& ctx, const Tensor& x) const {
  return down_proj.forward(ctx, act.forward(ctx, gate_up_proj.forward(ctx, x)));
}

namespace {

// With tp > 1 and ep = 1 the experts split along their intermediate features over the tp group; with
// ep > 1 they split whole over the ep group and each is kept entire (Note [Expert parallel]).
TpShard experts_inter_tp(const DeviceContext& dev) {
  const TpShard tp = tp_shard(dev);
  return dev.placement.ep_size > 1 ? TpShard{} : tp;
}

void add_expert(ExpertWeights& e, const Weight& gate, const Weight& up, const Weight& down) {
  e.gate.push_back(gate.values);
  e.up.push_back(up.values);
  e.down.push_back(down.values);
  if (gate.quantized()) {
    e.gate_q.push_back(gate.quant);
    e.up_q.push_back(up.quant);
    e.down_q.push_back(down.quant);
  }
}

}  // namespace

ExpertWeights load_experts(const std::string& prefix, const ModelConfig& c, const WeightStore& w,
                           std::pair<int64_t, int64_t> block, const TpShard& inter_tp) {
  ExpertWeights e;
  const int64_t h = c.hidden_size, inter = c.moe_intermediate_size;
  if (block.second == 0) block = {0, c.num_experts};
  const int64_t count = block.second - block.first;
  e.first_expert = block.first;
  e.total_experts = c.num_experts;
  std::vector<Weight> gate, up, down;
  if (w.contains(prefix + ".gate_up_proj")) {  // fused: each expert's gate rows, then its up rows
    const std::vector<Weight> gate_up = load_fused_experts(w, prefix + ".gate_up_proj", c.num_experts, 2 * inter, h);
    const std::vector<Weight> all_down = load_fused_experts(w, prefix + ".down_proj", c.num_experts, h, inter);
    for (int64_t i = block.first; i < block.second; ++i) {
      gate.push_back(select_rows(gate_up[i], {{0, inter}}));
      up.push_back(select_rows(gate_up[i], {{inter, 2 * inter}}));
      down.push_back(all_down[i]);
    }
  } else {
    for (int64_t i = block.first; i < block.second; ++i) {
      const std::string p = prefix + "." + std::to_string(i);
      gate.push_back(load_linear(w, p + ".gate_proj", inter, h));
      up.push_back(load_linear(w, p + ".up_proj", inter, h));
      down.push_back(load_linear(w, p + ".down_proj", h, inter));
    }
  }
  // One kernel runs every expert of a layer: they must be stored alike.
  for (int64_t i = 0; i < count; ++i)
    for (const Weight* m : {&gate[i], &up[i], &down[i]}) {
      const Weight& first = gate[0];
      const bool alike =
          m->dtype() == first.dtype() && m->quantized() == first.quantized() &&
          (!m->quantized() || (m->quant->scheme == first.quant->scheme && m->quant->act == first.quant->act));
      if (!alike)
        throw FormatError("expert weights under " + prefix + " in " + w.dir() + " mix storage: expert " +
                          std::to_string(block.first + i) + " has " + m->desc() + " where expert 0's gate_proj has " +
                          first.desc() + "; all experts of a layer must be stored alike");
    }
  if (!inter_tp.whole()) {
    const auto part = even_block(inter, inter_tp, "intermediate features of the experts under " + prefix);
    for (int64_t i = 0; i < count; ++i) {
      gate[i] = select_rows(gate[i], {part});
      up[i] = select_rows(up[i], {part});
      down[i] = select_cols(down[i], part.first, part.second);
    }
  }
  for (int64_t i = 0; i < count; ++i) add_expert(e, gate[i], up[i], down[i]);
  return e;
}

SparseMoeBlock::SparseMoeBlock(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w, bool shared)
    : gate(mc.child("gate"), load_linear(w, mc.path + ".gate", c.num_experts, c.hidden_size)),
      router(mc.child("router"), c.num_experts_per_tok, c.norm_topk_prob),
      experts(mc.child("experts"),
              load_experts(mc.path + ".experts", c, w, expert_block(*mc.device, c.num_experts, mc.path + ".experts"),
                           experts_inter_tp(*mc.device)),
              !experts_inter_tp(*mc.device).whole()) {
  if (shared) {
    shared_expert.emplace(mc.child("shared_expert"), w, c.hidden_size, c.shared_expert_intermediate_size);
    shared_expert_gate.emplace(mc.child("shared_expert_gate"),
                               load_linear(w, mc.path + ".shared_expert_gate", 1, c.hidden_size));
    shared_add.emplace(mc.child("shared_expert_gate"));
  }
}

Tensor SparseMoeBlock::forward(StepContext& ctx, const Tensor& x) const {
  Tensor router_logits = gate.forward(ctx, x);
  auto routing = router.forward(ctx, router_logits);
  Tensor out = experts.forward(ctx, x, routing.weights, routing.ids);
  if (shared_expert) shared_add->forward(shared_expert_gate->forward(ctx, x), shared_expert->forward(ctx, x), out);
  return out;
}

DecoderLayer::DecoderLayer(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                           const DecoderSpec& spec, int64_t layer)
    : input_layernorm(mc.child("input_layernorm"), w.get(mc.path + ".input_layernorm.weight", {c.hidden_size}),
                      static_cast<float>(c.rms_norm_eps)),
      self_attn(mc.child("self_attn"), c, w),
      post_attention_layernorm(mc.child("post_attention_layernorm"),
                               w.get(mc.path + ".post_attention_layernorm.weight", {c.hidden_size}),
                               static_cast<float>(c.rms_norm_eps)) {
  if (spec.moe != MoeKind::None && c.is_moe_layer(layer))
    moe.emplace(mc.child("mlp"), c, w, spec.moe == MoeKind::RoutedWithSharedExpert);
  else
    mlp.emplace(mc.child("mlp"), w, c.hidden_size, c.intermediate_size);
}

bool lm_head_is_embedding(const ModelConfig& c, const WeightStore& w) {
  return c.tie_word_embeddings && !w.contains("lm_head.weight") && !w.contains("lm_head.qweight") &&
         !w.contains("lm_head.weight_packed");
}

Weight lm_head_weight(const ModelConfig& c, const WeightStore& w, const std::string& embed_name) {
  // Tied checkpoints carry no lm_head; the embedding matrix doubles as the output projection.
  if (lm_head_is_embedding(c, w)) return w.get(embed_name, {c.vocab_size, c.hidden_size});
  return load_linear(w, "lm_head", c.vocab_size, c.hidden_size);
}

nn::Linear vocab_parallel_lm_head(const nn::ModuleContext& mc, const ModelConfig& c, const WeightStore& w,
                                  const std::string& embed_name) {
  const TpShard tp = tp_shard(*mc.device);
  Weight full = lm_head_weight(c, w, embed_name);
  if (tp.whole()) return nn::Linear(mc, std::move(full));
  // Each rank scores its block of the vocabulary; the blocks are gathered into whole rows of logits.
  const int64_t chunk = (c.vocab_size + tp.size - 1) / tp.size;
  const int64_t begin = std::min(c.vocab_size, tp.rank * chunk), end = std::min(c.vocab_size, begin + chunk);
  if (end <= begin)
    throw FormatError("tensor parallel size " + std::to_string(tp.size) + " leaves rank " + std::to_string(tp.rank) +
                      " no rows of the " + std::to_string(c.vocab_size) + "-token vocabulary");
  return nn::Linear(mc, select_rows(full, {{begin, end}}), {},
                    nn::LinearParallel{nn::LinearParallel::GatherOutputColumns, c.vocab_size});
}

DecoderModel::DecoderModel(const ModelConfig& c, const WeightStore& w, const DeviceContext& dev,
                           const BuildProgress& progress, const DecoderSpec& spec)
    : CausalLM(c),
      embed_tokens_({&dev, "model.embed_tokens"}, w.get("model.embed_tokens.weight", {c.vocab_size, c.hidden_size})),
      rotary_emb_({&dev, "model.rotary_emb"}, c.head_dim, c.rope_theta, c.rope_scaling, c.max_position_embeddings),
      norm_({&dev, "model.norm"}, w.get("model.norm.weight", {c.hidden_size}), static_cast<float>(c.rms_norm_eps)),
      lm_head_(vocab_parallel_lm_head({&dev, "lm_head"}, c, w, "model.embed_tokens.weight")) {
  // Decode reads one embedding row per token, and a row first touched mid-step took a page fault (20 us a
  // step on average on Zen 4, 4 us with the table mapped in).
  w.map_in("model.embed_tokens.weight");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    layers_.push_back(std::make_unique<DecoderLayer>(nn::ModuleContext{&dev, layer_prefix(l)}, c, w, spec, l));
    if (progress) progress(l + 1, c.num_hidden_layers);
  }
  for (const auto& name : w.names()) parameter_count_ += opchain::parameter_count(w, name);
  if (!layers_.empty()) cache_config_.num_key_value_heads = layers_.front()->self_attn.kv_heads;
}

// transformers' pre-norm residual stream, with the residual add folded into the next norm:
// h = embed; for each layer: x = norm(h); h += attn(x); x = norm(h); h += mlp(x). Then norm(h) @ lm_head.
Tensor DecoderModel::forward(StepContext& ctx, const std::vector<LayerKvCache>& cache) const {
  Tensor residual = embed_tokens_.forward(ctx, ctx.input_ids);
  const auto rope = rotary_emb_.forward(ctx);
  Tensor pending;  // the last sub-block's output, not yet added to the residual
  for (size_t l = 0; l < layers_.size(); ++l) {
    const DecoderLayer& layer = *layers_[l];
    // Layer l - 2's activations are dead: `pending` (layer l - 1's output) is in the other arena and
    // the residual in the step arena (Note [Layer arenas]).
    ctx.workspace->use_layer_arena(static_cast<int>(l % 2));
    Tensor x = pending.is_null() ? layer.input_layernorm.forward(ctx, residual)
                                 : layer.input_layernorm.forward_add(ctx, pending, residual);
    Tensor attn_out = layer.self_attn.forward(ctx, x, rope, cache[l]);
    x = layer.post_attention_layernorm.forward_add(ctx, attn_out, residual);
    pending = layer.moe ? layer.moe->forward(ctx, x) : layer.mlp->forward(ctx, x);
  }
  ctx.workspace->use_step_arena();  // the logits outlive the forward
  Tensor hidden = pending.is_null() ? norm_.forward(ctx, residual) : norm_.forward_add(ctx, pending, residual);
  return compute_logits(ctx, hidden, lm_head_);
}

Tensor compute_logits(StepContext& ctx, const Tensor& hidden, const nn::Linear& lm_head) {
  // Only the rows that need logits go through lm_head (the vocab projection dominates small steps).
  // Logits rows are strictly increasing, so asking for as many rows as there are is asking for all
  // of them: no gather, a decision from shapes alone, which a captured decode step relies on.
  const int64_t rows = ctx.logits_rows.numel(), h = hidden.size(1);
  if (rows == hidden.size(0)) return lm_head.forward(ctx, hidden);
  if (ctx.capturing)  // the gather below runs on the host: a replay would not redo it
    throw GraphCaptureError("lm_head gathers " + std::to_string(rows) + " of " + std::to_string(hidden.size(0)) +
                            " rows on the host, which a captured graph cannot replay; a captured step must ask for "
                            "the logits of every row (Note [Graph capture])");
  Tensor selected = ctx.workspace->alloc(DType::F32, {rows, h});
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = ctx.logits_rows.data<int32_t>()[r];
    std::memcpy(selected.data<float>() + r * h, hidden.data<float>() + src * h, static_cast<size_t>(h) * sizeof(float));
  }
  return lm_head.forward(ctx, selected);
}

}  // namespace opchain
