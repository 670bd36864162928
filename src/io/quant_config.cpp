#include "io/quant_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "io/json_input.h"

namespace opchain {

using nlohmann::json;

const char* quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::None:
      return "none";
    case QuantMethod::Fp8:
      return "fp8";
    case QuantMethod::Gptq:
      return "gptq";
    case QuantMethod::Awq:
      return "awq";
    case QuantMethod::CompressedTensors:
      return "compressed-tensors";
  }
  return "?";
}

namespace {

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// Python's re.match: anchored at the start, not at the end (docs/quantization.md).
bool regex_match_start(const std::string& pattern, const std::string& name) {
  try {
    std::smatch m;
    return std::regex_search(name, m, std::regex(pattern), std::regex_constants::match_continuous);
  } catch (const std::regex_error&) {
    return false;  // validated at parse time
  }
}

struct Keys {
  const json& j;
  const std::string& where;  // "<config.json>: quantization_config"
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw FormatError(where + ": '" + key + "' " + what);
  }
  bool has(const std::string& k) const { return j.contains(k) && !j[k].is_null(); }
  int64_t integer(const std::string& k, int64_t def) const {
    if (!has(k)) return def;
    if (!j[k].is_number_integer()) fail(k, "must be an integer, got " + json_excerpt(j[k]));
    return j[k].get<int64_t>();
  }
  bool boolean(const std::string& k, bool def) const {
    if (!has(k)) return def;
    if (!j[k].is_boolean()) fail(k, "must be true or false, got " + json_excerpt(j[k]));
    return j[k].get<bool>();
  }
  std::string string(const std::string& k, const std::string& def) const {
    if (!has(k)) return def;
    if (!j[k].is_string()) fail(k, "must be a string, got " + json_excerpt(j[k]));
    return j[k].get<std::string>();
  }
  std::vector<std::string> strings(const std::string& k) const {
    std::vector<std::string> out;
    if (!has(k)) return out;
    if (!j[k].is_array()) fail(k, "must be a list of names");
    for (const auto& v : j[k]) {
      if (!v.is_string()) fail(k, "must be a list of names, got " + json_excerpt(v));
      out.push_back(v.get<std::string>());
    }
    return out;
  }
};

void check_regexes(const std::vector<std::string>& entries, const Keys& k, const std::string& key) {
  for (const auto& e : entries) {
    if (e.rfind("re:", 0) != 0) continue;
    try {
      std::regex r(e.substr(3));
    } catch (const std::regex_error& err) {
      k.fail(key, "has an invalid regex '" + e + "': " + err.what());
    }
  }
}

CtArgs parse_ct_args(const json& a, const std::string& where) {
  const Keys k{a, where};
  CtArgs c;
  c.bits = static_cast<int>(k.integer("num_bits", 8));
  const std::string type = k.string("type", "int");
  if (type != "int" && type != "float") k.fail("type", "is '" + type + "' (int or float)");
  c.is_float = type == "float";
  c.symmetric = k.boolean("symmetric", true);
  c.group_size = k.integer("group_size", 0);
  c.dynamic =
      a.contains("dynamic") && ((a["dynamic"].is_boolean() && a["dynamic"].get<bool>()) || a["dynamic"].is_string());
  c.strategy = k.string("strategy", "");
  if (c.strategy.empty()) c.strategy = c.group_size > 0 ? "group" : c.group_size == -1 ? "channel" : "tensor";
  if (k.has("block_structure")) {
    const json& b = a["block_structure"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
      k.fail("block_structure", "must be [rows, cols]");
    c.block_rows = b[0].get<int64_t>();
    c.block_cols = b[1].get<int64_t>();
  }
  return c;
}

// The (weights, activations) combinations the engine runs, per compressed-tensors format.
void check_ct_scheme(const CtScheme& s, const std::string& where) {
  if (!s.weights)
    throw FormatError(where + ": a config group without 'weights' (activation-only quantisation) is not supported");
  const CtArgs& w = *s.weights;
  const bool int4 = !w.is_float && w.bits == 4 && (w.strategy == "group" || w.strategy == "channel");
  const bool int8 = !w.is_float && w.bits == 8 && w.strategy == "channel";
  const bool fp8 =
      w.is_float && w.bits == 8 && (w.strategy == "tensor" || w.strategy == "channel" || w.strategy == "block");
  if (!int4 && !int8 && !fp8)
    throw FormatError(where + ": weights of " + std::to_string(w.bits) + "-bit " + (w.is_float ? "float" : "int") +
                      " with strategy '" + w.strategy +
                      "' are not supported (int4 group/channel, int8 channel, fp8 tensor/channel/block)");
  if (int4 && w.strategy == "group" && w.group_size <= 0)
    throw FormatError(where + ": group strategy without a positive group_size");
  if (fp8 && !w.symmetric) throw FormatError(where + ": asymmetric fp8 weights are not supported");
  if (s.input_activations) {
    const CtArgs& a = *s.input_activations;
    if (!a.dynamic)
      throw FormatError(where + ": static input activations (input_scale) are not supported; dynamic ones are");
    if (!a.symmetric) throw FormatError(where + ": asymmetric input activations are not supported");
    const bool int8_token = int8 && !a.is_float && a.bits == 8 && a.strategy == "token";
    const bool fp8_act = fp8 && a.is_float && a.bits == 8 && (a.strategy == "token" || a.strategy == "group");
    if (!int8_token && !fp8_act)
      throw FormatError(
          where + ": input activations of " + std::to_string(a.bits) + "-bit " + (a.is_float ? "float" : "int") +
          " with strategy '" + a.strategy +
          "' do not go with these weights (int8 weights: int8 per token; fp8 weights: fp8 per token or group)");
  }
}

}  // namespace

bool QuantConfig::excludes(const std::string& name) const {
  for (const auto& key : not_converted) {
    switch (method) {
      case QuantMethod::Awq:  // AutoAWQ and vLLM: a substring test
        if (name.find(key) != std::string::npos) return true;
        break;
      case QuantMethod::Gptq:  // dynamic "-:" patterns (stored without the prefix)
      case QuantMethod::CompressedTensors:
        if (key.rfind("re:", 0) == 0 ? regex_match_start(key.substr(3), name) : key == name) return true;
        if (method == QuantMethod::Gptq && regex_match_start(key, name)) return true;
        break;
      default:  // fp8 (transformers): the module itself, a prefix of it, or a suffix of its name
        if (name == key || name.rfind(key + ".", 0) == 0 || ends_with(name, key)) return true;
    }
  }
  return false;
}

const CtScheme* QuantConfig::scheme_for(const std::string& name) const {
  for (const CtScheme& s : schemes)
    for (const auto& t : s.targets) {
      if (t == "Linear" || t == name) return &s;
      if (t.rfind("re:", 0) == 0 && regex_match_start(t.substr(3), name)) return &s;
    }
  return nullptr;
}

QuantConfig parse_quant_config(const std::string& text, const std::string& source) {
  QuantConfig c;
  c.source = source;
  const json root = parse_json_input(text, source);
  if (!root.is_object() || !root.contains("quantization_config") || root["quantization_config"].is_null()) return c;
  const json& q = root["quantization_config"];
  const std::string where = source + ": quantization_config";
  if (!q.is_object()) throw FormatError(where + " must be an object");
  const Keys k{q, where};
  const std::string method = k.string("quant_method", "");
  if (method == "fp8") {
    c.method = QuantMethod::Fp8;
    if (k.has("fmt") && k.string("fmt", "") != "e4m3") k.fail("fmt", "is '" + k.string("fmt", "") + "' (only e4m3)");
    const std::string act = k.string("activation_scheme", "dynamic");
    if (act != "dynamic" && act != "static") k.fail("activation_scheme", "is '" + act + "' (dynamic or static)");
    c.dynamic_activations = act == "dynamic";
    if (k.has("weight_block_size")) {
      const json& b = q["weight_block_size"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
          b[0].get<int64_t>() <= 0 || b[1].get<int64_t>() <= 0)
        k.fail("weight_block_size", "must be two positive integers [block_n, block_k], got " + json_excerpt(b));
      c.block_n = b[0].get<int64_t>();
      c.block_k = b[1].get<int64_t>();
      if (!c.dynamic_activations) k.fail("activation_scheme", "must be dynamic with weight_block_size (block fp8)");
    }
    if (!c.dynamic_activations)
      k.fail("activation_scheme", "static (per-tensor input_scale) is not supported; dynamic activations are");
    c.not_converted =
        k.has("modules_to_not_convert") ? k.strings("modules_to_not_convert") : k.strings("ignored_layers");
  } else if (method == "gptq") {
    c.method = QuantMethod::Gptq;
    c.bits = static_cast<int>(k.integer("bits", 4));
    if (c.bits != 4) k.fail("bits", "is " + std::to_string(c.bits) + "; 4-bit GPTQ is supported");
    c.group_size = k.integer("group_size", 128);
    if (c.group_size == 0 || c.group_size < -1) k.fail("group_size", "must be positive or -1");
    c.desc_act = k.boolean("desc_act", false);
    c.sym = k.boolean("sym", true);
    const std::string fmt =
        k.has("checkpoint_format") ? k.string("checkpoint_format", "gptq") : k.string("format", "gptq");
    if (fmt != "gptq" && fmt != "gptq_v2")
      k.fail("checkpoint_format", "is '" + fmt + "' (gptq or gptq_v2; repacked marlin/bitblas layouts are not read)");
    c.gptq_v2 = fmt == "gptq_v2";
    if (k.has("dynamic")) {
      if (!q["dynamic"].is_object()) k.fail("dynamic", "must be an object of per-module overrides");
      for (const auto& [key, v] : q["dynamic"].items()) {
        if (key.rfind("-:", 0) == 0)
          c.not_converted.push_back(key.substr(2));
        else if (!v.empty())
          k.fail("dynamic",
                 "overrides module parameters ('" + key + "'), which is not supported; only '-:' exclusions are");
      }
    }
  } else if (method == "awq") {
    c.method = QuantMethod::Awq;
    std::string version = k.string("version", "gemm");
    std::transform(version.begin(), version.end(), version.begin(), ::tolower);
    if (version != "gemm") k.fail("version", "is '" + version + "'; AWQ's gemm layout is supported");
    c.bits = static_cast<int>(k.has("bits") ? k.integer("bits", 4) : k.integer("w_bit", 4));
    if (c.bits != 4) k.fail("bits", "is " + std::to_string(c.bits) + "; 4-bit AWQ is supported");
    c.group_size = k.has("group_size") ? k.integer("group_size", 128) : k.integer("q_group_size", 128);
    if (c.group_size <= 0 && c.group_size != -1) k.fail("group_size", "must be positive or -1");
    c.zero_point = k.boolean("zero_point", true);
    c.not_converted = k.strings("modules_to_not_convert");
  } else if (method == "compressed-tensors") {
    c.method = QuantMethod::CompressedTensors;
    c.format = k.string("format", "");
    if (!k.has("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
      k.fail("config_groups", "must be a non-empty object of quantisation schemes");
    for (const auto& [name, g] : q["config_groups"].items()) {
      const std::string gw = where + ".config_groups." + name;
      if (!g.is_object()) throw FormatError(gw + " must be an object");
      const Keys gk{g, gw};
      CtScheme s;
      s.targets = gk.strings("targets");
      check_regexes(s.targets, gk, "targets");
      if (gk.has("weights")) s.weights = parse_ct_args(g["weights"], gw + ".weights");
      if (gk.has("input_activations"))
        s.input_activations = parse_ct_args(g["input_activations"], gw + ".input_activations");
      s.format = gk.string("format", c.format);
      if (s.format != "int-quantized" && s.format != "naive-quantized" && s.format != "pack-quantized" &&
          s.format != "float-quantized")
        throw FormatError(gw + ": format '" + s.format +
                          "' is not supported (int-quantized, naive-quantized, pack-quantized, float-quantized)");
      check_ct_scheme(s, gw);
      c.schemes.push_back(std::move(s));
    }
    c.not_converted = k.strings("ignore");
    check_regexes(c.not_converted, k, "ignore");
  } else {
    k.fail("quant_method", "is '" + method + "'; supported: fp8, gptq, awq, compressed-tensors");
  }
  return c;
}

}  // namespace opchain
