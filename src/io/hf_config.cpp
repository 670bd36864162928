#include "io/hf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/hf_config_detail.h"
#include "io/input_errors.h"
#include "io/json_input.h"
#include "io/model_directory.h"

namespace opchain {

using nlohmann::json;

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> archs = {"Qwen3MoeForCausalLM",   "Qwen3ForCausalLM",
                                                 "Qwen2ForCausalLM",      "LlamaForCausalLM",
                                                 "Qwen2MoeForCausalLM",   "Qwen3NextForCausalLM",
                                                 "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                                                 "Qwen3_5ForCausalLM",    "Qwen3_5ForConditionalGeneration"};
  return archs;
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) return false;
  return decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
}

namespace hf_detail {

RopeScaling parse_rope_scaling(const json& rs, const std::string& source) {
  RopeScaling r;
  if (rs.is_null()) return r;
  if (!rs.is_object()) throw FormatError(source + ": field 'rope_scaling' must be an object or null");
  std::string type;
  if (rs.contains("rope_type") && rs["rope_type"].is_string())
    type = rs["rope_type"];
  else if (rs.contains("type") && rs["type"].is_string())
    type = rs["type"];
  Reader rd{rs, source};
  r.factor = rd.opt_num("factor", 1.0);
  if (type == "default" || type.empty())
    r.type = RopeScalingType::None;
  else if (type == "linear")
    r.type = RopeScalingType::Linear;
  else if (type == "dynamic")
    r.type = RopeScalingType::Dynamic;
  else if (type == "yarn")
    r.type = RopeScalingType::Yarn;
  else if (type == "llama3")
    r.type = RopeScalingType::Llama3;
  else
    throw FormatError(source + ": rope_scaling type '" + type +
                      "' is not supported (none, linear, dynamic, yarn, llama3)");
  r.low_freq_factor = rd.opt_num("low_freq_factor", 1.0);
  r.high_freq_factor = rd.opt_num("high_freq_factor", 4.0);
  r.original_max_position_embeddings = rd.opt_int("original_max_position_embeddings", 0);
  r.beta_fast = rd.opt_num("beta_fast", 32.0);
  r.beta_slow = rd.opt_num("beta_slow", 1.0);
  if (rs.contains("attention_factor") && rs["attention_factor"].is_number())
    r.attention_factor = rs["attention_factor"].get<double>();
  if (rs.contains("mscale") && rs["mscale"].is_number()) r.mscale = rs["mscale"].get<double>();
  if (rs.contains("mscale_all_dim") && rs["mscale_all_dim"].is_number())
    r.mscale_all_dim = rs["mscale_all_dim"].get<double>();
  r.truncate = rd.opt_bool("truncate", true);
  if ((r.type == RopeScalingType::Linear || r.type == RopeScalingType::Dynamic || r.type == RopeScalingType::Yarn ||
       r.type == RopeScalingType::Llama3) &&
      !(r.factor > 0))
    throw FormatError(source + ": rope_scaling.factor must be positive");
  if (r.type == RopeScalingType::Llama3 && r.original_max_position_embeddings <= 0)
    throw FormatError(source + ": rope_scaling (llama3) needs original_max_position_embeddings");
  return r;
}

void parse_special_token_ids(const json& j, ModelConfig& c) {
  if (j.contains("eos_token_id")) {
    const auto& e = j["eos_token_id"];
    if (e.is_number_integer())
      c.eos_token_ids.push_back(e.get<int64_t>());
    else if (e.is_array())
      for (const auto& v : e)
        if (v.is_number_integer()) c.eos_token_ids.push_back(v.get<int64_t>());
  }
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer())
    c.bos_token_id = j["bos_token_id"].get<int64_t>();
}

}  // namespace hf_detail

using hf_detail::parse_rope_scaling;
using hf_detail::Reader;

namespace {

// Sizes a config may declare. Buffers are sized from these before any weight is read (the rotary
// table from head_dim, the KV cache from layers x heads x head_dim), so a tiny config.json with a
// huge value must fail here rather than as an allocation of terabytes. Each bound is far above any
// released model (docs/reliability.md lists them).
struct ConfigLimit {
  const char* field;
  int64_t value;
  int64_t max;
};

void check_config_limits(const ModelConfig& c, const std::string& source) {
  const ConfigLimit limits[] = {
      {"vocab_size", c.vocab_size, int64_t{1} << 21},
      {"hidden_size", c.hidden_size, int64_t{1} << 17},
      {"intermediate_size", c.intermediate_size, int64_t{1} << 20},
      {"moe_intermediate_size", c.moe_intermediate_size, int64_t{1} << 20},
      {"shared_expert_intermediate_size", c.shared_expert_intermediate_size, int64_t{1} << 20},
      {"num_hidden_layers", c.num_hidden_layers, 4096},
      {"num_attention_heads", c.num_attention_heads, 4096},
      {"num_key_value_heads", c.num_key_value_heads, 4096},
      {"head_dim", c.head_dim, 4096},
      {"max_position_embeddings", c.max_position_embeddings, int64_t{1} << 24},
      {"num_experts", c.num_experts, 4096},
      {"linear_num_key_heads", c.linear.num_key_heads, 4096},
      {"linear_num_value_heads", c.linear.num_value_heads, 4096},
      {"linear_key_head_dim", c.linear.key_head_dim, 4096},
      {"linear_value_head_dim", c.linear.value_head_dim, 4096},
      {"linear_conv_kernel_dim", c.linear.conv_kernel, 64},
  };
  for (const auto& l : limits) {
    if (l.value < 0)
      throw FormatError(source + ": field '" + l.field + "' must not be negative, got " + std::to_string(l.value));
    if (l.value > l.max)
      throw FormatError(source + ": field '" + l.field + "' is " + std::to_string(l.value) +
                        ", over opchain's limit of " + std::to_string(l.max));
  }
  // The kernels take these as floats: a value with no float is refused rather than converted (UB).
  const std::pair<const char*, double> reals[] = {{"rope_theta", c.rope_theta},
                                                  {"rms_norm_eps", c.rms_norm_eps},
                                                  {"rope_scaling.factor", c.rope_scaling.factor},
                                                  {"rope_scaling.low_freq_factor", c.rope_scaling.low_freq_factor},
                                                  {"rope_scaling.high_freq_factor", c.rope_scaling.high_freq_factor},
                                                  {"rope_scaling.beta_fast", c.rope_scaling.beta_fast},
                                                  {"rope_scaling.beta_slow", c.rope_scaling.beta_slow}};
  for (const auto& [field, v] : reals) {
    if (!(std::abs(v) <= std::numeric_limits<float>::max()))
      throw FormatError(source + ": field '" + field + "' is " + std::to_string(v) + ", outside the range of a float");
  }
}

}  // namespace

int64_t ModelConfig::num_linear_attention_layers() const {
  return std::count(layer_types.begin(), layer_types.end(), LayerKind::LinearAttention);
}

namespace {

ModelConfig parse_model_config_unguarded(const std::string& text, const std::string& source) {
  const json j = parse_json_input(text, source);
  if (!j.is_object()) throw FormatError(source + " is not a JSON object");
  ModelConfig c;
  c.source = source;
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string())
    throw FormatError(source + ": field 'architectures' must be a non-empty list of names");
  c.architecture = j["architectures"][0].get<std::string>();
  const auto& archs = supported_architectures();
  if (std::find(archs.begin(), archs.end(), c.architecture) == archs.end()) {
    std::string list;
    for (const auto& a : archs) list += (list.empty() ? "" : ", ") + a;
    throw FormatError(source + ": unknown architecture '" + c.architecture + "'; supported: " + list);
  }
  if (j.contains("model_type") && j["model_type"].is_string()) c.model_type = j["model_type"];
  if (hf_detail::is_hybrid_architecture(c.architecture)) {
    hf_detail::parse_hybrid_config(j, c);
    check_config_limits(c, source);
    return c;
  }
  Reader rd{j, source};
  c.vocab_size = rd.req_int("vocab_size");
  c.hidden_size = rd.req_int("hidden_size");
  c.num_hidden_layers = rd.req_int("num_hidden_layers");
  c.num_attention_heads = rd.req_int("num_attention_heads");
  c.num_key_value_heads = rd.opt_int("num_key_value_heads", c.num_attention_heads);
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    rd.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  // transformers: head_dim = config.head_dim if present (and not null), else hidden / heads.
  c.head_dim = rd.opt_int("head_dim", c.hidden_size / c.num_attention_heads);
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) rd.fail("head_dim", "must be a positive even number");
  c.max_position_embeddings = rd.opt_int("max_position_embeddings", 2048);
  c.rms_norm_eps = rd.opt_num("rms_norm_eps", 1e-6);
  c.rope_theta = rd.opt_num("rope_theta", 10000.0);
  if (j.contains("rope_scaling")) c.rope_scaling = parse_rope_scaling(j["rope_scaling"], source);
  c.tie_word_embeddings = rd.opt_bool("tie_word_embeddings", false);
  if (j.contains("hidden_act") && j["hidden_act"].is_string()) c.hidden_act = j["hidden_act"];
  if (c.hidden_act != "silu" && c.hidden_act != "swish")
    throw FormatError(source + ": hidden_act '" + c.hidden_act + "' is not supported (silu)");

  const std::string& a = c.architecture;
  if (a == "Qwen3MoeForCausalLM" || a == "Qwen3ForCausalLM") {
    c.qk_norm = true;
    c.attention_bias = rd.opt_bool("attention_bias", false);
    c.qkv_bias = c.o_bias = c.attention_bias;
  } else if (a == "Qwen2ForCausalLM" || a == "Qwen2MoeForCausalLM") {
    c.qkv_bias = true;  // Qwen2 hard-codes q/k/v bias and no o bias
    c.o_bias = false;
  } else if (a == "LlamaForCausalLM") {
    c.attention_bias = rd.opt_bool("attention_bias", false);
    c.qkv_bias = c.o_bias = c.attention_bias;
    if (rd.opt_bool("mlp_bias", false)) throw FormatError(source + ": mlp_bias true is not supported");
  }
  const bool is_moe = a == "Qwen3MoeForCausalLM" || a == "Qwen2MoeForCausalLM";
  if (is_moe) {
    c.num_experts = rd.req_int("num_experts");
    c.num_experts_per_tok = rd.req_int("num_experts_per_tok");
    c.moe_intermediate_size = rd.req_int("moe_intermediate_size");
    if (c.num_experts_per_tok > c.num_experts) rd.fail("num_experts_per_tok", "exceeds num_experts");
    c.norm_topk_prob = rd.opt_bool("norm_topk_prob", a == "Qwen3MoeForCausalLM" ? false : false);
    c.decoder_sparse_step = rd.opt_int("decoder_sparse_step", 1);
    if (c.decoder_sparse_step <= 0) rd.fail("decoder_sparse_step", "must be positive");
    if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
      if (!j["mlp_only_layers"].is_array()) rd.fail("mlp_only_layers", "must be a list of layer indices");
      for (const auto& v : j["mlp_only_layers"]) {
        if (!v.is_number_integer()) rd.fail("mlp_only_layers", "must be a list of layer indices");
        c.mlp_only_layers.push_back(v.get<int64_t>());
      }
    }
    if (a == "Qwen2MoeForCausalLM") c.shared_expert_intermediate_size = rd.req_int("shared_expert_intermediate_size");
    c.router_n_groups = rd.opt_int("n_group", 0);
    c.router_topk_groups = rd.opt_int("topk_group", 0);
  }
  bool needs_dense = !is_moe || c.decoder_sparse_step > 1 || !c.mlp_only_layers.empty();
  c.intermediate_size = needs_dense ? rd.req_int("intermediate_size") : rd.opt_int("intermediate_size", 0);

  c.rotary_dim = c.head_dim;
  hf_detail::parse_special_token_ids(j, c);
  check_config_limits(c, source);
  return c;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& source) {
  return guard_input(source, [&] { return parse_model_config_unguarded(text, source); });
}

ModelConfig load_model_config(const ModelDirectory& dir) {
  return parse_model_config(dir.config_text(), dir.config.path);
}

ModelConfig load_model_config(const std::string& model_dir) {
  return load_model_config(ModelDirectory::read(model_dir));
}

}  // namespace opchain
