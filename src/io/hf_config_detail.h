#pragma once
// Internals shared by the config parsers (hf_config.cpp, hf_config_hybrid.cpp): typed field reads
// whose errors name the file and the field.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_input.h"

namespace opchain::hf_detail {

using nlohmann::json;

struct Reader {
  const json& j;
  const std::string& source;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw FormatError(source + ": field '" + key + "' " + what);
  }
  // Every integer field fits 32 bits, so a product of two of them (key heads x head dim, rotary
  // channels) cannot overflow before check_config_limits applies the per-field bounds.
  int64_t int_field(const std::string& key) const {
    if (!j[key].is_number_integer()) fail(key, "must be an integer, got " + json_excerpt(j[key]));
    const bool in_range = j[key].is_number_unsigned()
                              ? j[key].get<uint64_t>() <= INT32_MAX
                              : j[key].get<int64_t>() >= INT32_MIN && j[key].get<int64_t>() <= INT32_MAX;
    if (!in_range) fail(key, "is " + json_excerpt(j[key]) + ", outside the 32-bit range opchain allows any size");
    return j[key].get<int64_t>();
  }
  int64_t req_int(const std::string& key) const {
    if (!j.contains(key)) fail(key, "is missing");
    const int64_t v = int_field(key);
    if (v <= 0) fail(key, "must be positive, got " + std::to_string(v));
    return v;
  }
  int64_t opt_int(const std::string& key, int64_t def) const {
    if (!j.contains(key) || j[key].is_null()) return def;
    return int_field(key);
  }
  double opt_num(const std::string& key, double def) const {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_number()) fail(key, "must be a number, got " + json_excerpt(j[key]));
    return j[key].get<double>();
  }
  // Absent or null: def; otherwise a positive integer.
  int64_t opt_pos_int(const std::string& key, int64_t def) const {
    const int64_t v = opt_int(key, def);
    if (v <= 0) fail(key, "must be positive, got " + std::to_string(v));
    return v;
  }
  bool opt_bool(const std::string& key, bool def) const {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_boolean()) fail(key, "must be true or false, got " + json_excerpt(j[key]));
    return j[key].get<bool>();
  }
};

// rope_scaling (4.x) or rope_parameters (5.x): the scaling type and its parameters.
RopeScaling parse_rope_scaling(const json& rs, const std::string& source);

// eos_token_id (an id or a list) and bos_token_id, where present.
void parse_special_token_ids(const json& j, ModelConfig& c);

// The hybrid architectures (Qwen3-Next, Qwen3.5 dense and MoE, text and hub layouts), from the root
// config object: fills every field of c but architecture, model_type and source.
void parse_hybrid_config(const json& root, ModelConfig& c);
bool is_hybrid_architecture(const std::string& architecture);

}  // namespace opchain::hf_detail
