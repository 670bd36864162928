// Config semantics of the hybrid decoders as transformers 5.x has them (docs/hybrid-models.md):
// Qwen3-Next, and Qwen3.5 dense and MoE in the text and the hub layout. Their
// defaults differ from Qwen3-MoE's: head_dim 256 (not hidden / heads), partial rotary 0.25, a full
// attention layer every 4th layer, norm_topk_prob true.
#include <algorithm>

#include "io/hf_config_detail.h"

namespace opchain::hf_detail {

namespace {

// What differs between the hybrid architectures; the defaults are each config class's.
struct Family {
  const char* architecture;
  bool hub_layout;  // nested text_config, weights under model.language_model.
  bool next;        // Qwen3-Next: grouped in_proj_qkvz / in_proj_ba, dense layers by sparse step
  bool moe;
  int64_t vocab, hidden, intermediate, layers, kv_heads, experts, top_k;
};

constexpr Family kFamilies[] = {
    {"Qwen3NextForCausalLM", false, true, true, 151936, 2048, 5632, 48, 2, 512, 10},
    {"Qwen3_5MoeForCausalLM", false, false, true, 248320, 2048, 0, 40, 2, 256, 8},
    {"Qwen3_5MoeForConditionalGeneration", true, false, true, 248320, 2048, 0, 40, 2, 256, 8},
    {"Qwen3_5ForCausalLM", false, false, false, 248320, 4096, 12288, 32, 4, 0, 0},
    {"Qwen3_5ForConditionalGeneration", true, false, false, 248320, 4096, 12288, 32, 4, 0, 0},
};

const Family* family_of(const std::string& architecture) {
  for (const Family& f : kFamilies)
    if (architecture == f.architecture) return &f;
  return nullptr;
}

const json* object_or_null(const json& j, const char* key) {
  return j.contains(key) && j[key].is_object() ? &j[key] : nullptr;
}

// rope_scaling (4.x) wins over rope_parameters (5.x) when both are given; rope_theta and
// partial_rotary_factor come from that dict first, then the top-level key, then the defaults.
void parse_rope(const json& t, const Reader& rd, ModelConfig& c) {
  const json* params = object_or_null(t, "rope_scaling");
  if (!params) params = object_or_null(t, "rope_parameters");
  if (params) c.rope_scaling = parse_rope_scaling(*params, rd.source);
  const Reader pr{params ? *params : t, rd.source};
  c.rope_theta =
      params && params->contains("rope_theta") ? pr.opt_num("rope_theta", 10000.0) : rd.opt_num("rope_theta", 10000.0);
  const double factor = params && params->contains("partial_rotary_factor") ? pr.opt_num("partial_rotary_factor", 0.25)
                                                                            : rd.opt_num("partial_rotary_factor", 0.25);
  if (!(c.rope_theta > 0)) rd.fail("rope_theta", "must be positive");
  if (!(factor > 0 && factor <= 1))
    rd.fail("partial_rotary_factor", "must be in (0, 1], got " + std::to_string(factor));
  c.rotary_dim =
      static_cast<int64_t>(static_cast<double>(c.head_dim) * factor);  // transformers: int(head_dim * factor)
  if (c.rotary_dim < 2 || c.rotary_dim % 2 != 0)
    rd.fail("partial_rotary_factor", "gives " + std::to_string(c.rotary_dim) + " rotary channels of head_dim " +
                                         std::to_string(c.head_dim) + "; they must be a positive even number");
}

// An explicit layer_types list wins; without it layer i is full attention iff (i + 1) % interval == 0.
void parse_layer_types(const json& t, const Reader& rd, ModelConfig& c) {
  c.layer_types.clear();
  if (t.contains("layer_types") && !t["layer_types"].is_null()) {
    const json& lt = t["layer_types"];
    if (!lt.is_array()) rd.fail("layer_types", "must be a list of \"linear_attention\" / \"full_attention\"");
    if (static_cast<int64_t>(lt.size()) != c.num_hidden_layers)
      rd.fail("layer_types", "lists " + std::to_string(lt.size()) + " layers but num_hidden_layers is " +
                                 std::to_string(c.num_hidden_layers));
    for (size_t i = 0; i < lt.size(); ++i) {
      const std::string kind = lt[i].is_string() ? lt[i].get<std::string>() : json_excerpt(lt[i]);
      if (kind == "linear_attention" || kind == "mamba")
        c.layer_types.push_back(LayerKind::LinearAttention);  // legacy names
      else if (kind == "full_attention" || kind == "attention")
        c.layer_types.push_back(LayerKind::FullAttention);
      else
        rd.fail("layer_types",
                "entry " + std::to_string(i) + " is '" + kind + "' (linear_attention or full_attention)");
    }
    return;
  }
  const int64_t interval = rd.opt_pos_int("full_attention_interval", 4);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    c.layer_types.push_back((i + 1) % interval == 0 ? LayerKind::FullAttention : LayerKind::LinearAttention);
}

void parse_linear_attention(const Reader& rd, ModelConfig& c) {
  LinearAttentionConfig& l = c.linear;
  l.num_key_heads = rd.opt_pos_int("linear_num_key_heads", 16);
  l.num_value_heads = rd.opt_pos_int("linear_num_value_heads", 32);
  l.key_head_dim = rd.opt_pos_int("linear_key_head_dim", 128);
  l.value_head_dim = rd.opt_pos_int("linear_value_head_dim", 128);
  l.conv_kernel = rd.opt_pos_int("linear_conv_kernel_dim", 4);
  if (l.num_value_heads % l.num_key_heads != 0)
    rd.fail("linear_num_value_heads", "(" + std::to_string(l.num_value_heads) +
                                          ") must be a multiple of linear_num_key_heads (" +
                                          std::to_string(l.num_key_heads) + ")");
}

void parse_mlp(const json& t, const Reader& rd, const Family& f, ModelConfig& c) {
  c.intermediate_size =
      f.intermediate ? rd.opt_pos_int("intermediate_size", f.intermediate) : rd.opt_int("intermediate_size", 0);
  if (!f.moe) return;
  c.num_experts = rd.opt_int("num_experts", f.experts);
  if (c.num_experts < 0) rd.fail("num_experts", "must not be negative");
  c.num_experts_per_tok = rd.opt_pos_int("num_experts_per_tok", f.top_k);
  c.moe_intermediate_size = rd.opt_pos_int("moe_intermediate_size", 512);
  c.shared_expert_intermediate_size = rd.opt_pos_int("shared_expert_intermediate_size", 512);
  if (c.num_experts > 0 && c.num_experts_per_tok > c.num_experts) rd.fail("num_experts_per_tok", "exceeds num_experts");
  if (!f.next) {  // Qwen3.5-MoE: every layer sparse, top-k always renormalised (its config has no such keys)
    c.norm_topk_prob = true;
    return;
  }
  c.norm_topk_prob = rd.opt_bool("norm_topk_prob", true);
  c.decoder_sparse_step = rd.opt_pos_int("decoder_sparse_step", 1);
  if (t.contains("mlp_only_layers") && !t["mlp_only_layers"].is_null()) {
    if (!t["mlp_only_layers"].is_array()) rd.fail("mlp_only_layers", "must be a list of layer indices");
    for (const auto& v : t["mlp_only_layers"]) {
      if (!v.is_number_integer()) rd.fail("mlp_only_layers", "must be a list of layer indices");
      c.mlp_only_layers.push_back(v.get<int64_t>());
    }
  }
  bool any_dense = false;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) any_dense = any_dense || !c.is_moe_layer(l);
  if (any_dense && c.intermediate_size <= 0)
    rd.fail("intermediate_size", "must be positive: some layers are dense MLPs");
}

}  // namespace

bool is_hybrid_architecture(const std::string& architecture) { return family_of(architecture) != nullptr; }

void parse_hybrid_config(const json& root, ModelConfig& c) {
  const Family& f = *family_of(c.architecture);
  const json* text = &root;
  std::string text_source = c.source;
  if (f.hub_layout) {
    text = object_or_null(root, "text_config");
    if (!text)
      throw FormatError(c.source + ": " + c.architecture +
                        " keeps the text model's keys in a 'text_config' object, which is missing");
    text_source = c.source + " (text_config)";
    c.weight_prefix = "model.language_model.";
  }
  const json& t = *text;
  const Reader rd{t, text_source};
  c.vocab_size = rd.opt_pos_int("vocab_size", f.vocab);
  c.hidden_size = rd.opt_pos_int("hidden_size", f.hidden);
  c.num_hidden_layers = rd.opt_pos_int("num_hidden_layers", f.layers);
  c.num_attention_heads = rd.opt_pos_int("num_attention_heads", 16);
  c.num_key_value_heads = rd.opt_pos_int("num_key_value_heads", f.kv_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    rd.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  c.head_dim = rd.opt_pos_int("head_dim", 256);
  if (c.head_dim % 2 != 0) rd.fail("head_dim", "must be even");
  c.max_position_embeddings = rd.opt_pos_int("max_position_embeddings", 32768);
  c.rms_norm_eps = rd.opt_num("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0)) rd.fail("rms_norm_eps", "must be positive");
  if (t.contains("hidden_act") && t["hidden_act"].is_string()) c.hidden_act = t["hidden_act"];
  if (c.hidden_act != "silu" && c.hidden_act != "swish")
    throw FormatError(text_source + ": hidden_act '" + c.hidden_act + "' is not supported (silu)");
  c.attention_bias = rd.opt_bool("attention_bias", false);  // q (query and gate rows), k, v and o
  c.qkv_bias = c.o_bias = c.attention_bias;
  c.qk_norm = true;
  c.attn_output_gate = true;  // transformers never reads attn_output_gate: the gate is always there
  c.zero_centered_norms = true;
  c.grouped_qkvz = f.next;
  parse_rope(t, rd, c);
  parse_layer_types(t, rd, c);
  parse_linear_attention(rd, c);
  parse_mlp(t, rd, f, c);
  // The hub wrapper's own tie_word_embeddings is the one transformers uses when it is there.
  const Reader root_rd{root, c.source};
  c.tie_word_embeddings = f.hub_layout && root.contains("tie_word_embeddings")
                              ? root_rd.opt_bool("tie_word_embeddings", false)
                              : rd.opt_bool("tie_word_embeddings", false);
  parse_special_token_ids(t, c);
  if (f.hub_layout && c.eos_token_ids.empty() && !c.bos_token_id) parse_special_token_ids(root, c);
}

}  // namespace opchain::hf_detail
