#include "engine/generation_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opchain {

GenerationDefaults load_generation_defaults(const std::string& model_dir, const std::vector<int64_t>& config_eos_ids) {
  GenerationDefaults d;
  for (int64_t e : config_eos_ids) d.eos_ids.push_back(static_cast<int32_t>(e));
  const auto path = std::filesystem::path(model_dir) / "generation_config.json";
  if (!std::filesystem::exists(path)) return d;
  std::ifstream in(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string() + " is not valid JSON: " + e.what());
  }
  try {
    d.sampling = SamplingParams::from_generation_config(j);
  } catch (const Error& e) {
    throw FormatError(path.string() + ": " + e.what());
  }
  if (j.contains("eos_token_id")) {
    std::vector<int32_t> ids;
    const auto& e = j["eos_token_id"];
    if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
    else if (e.is_array())
      for (const auto& v : e)
        if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
    if (!ids.empty()) d.eos_ids = ids;
  }
  if (j.contains("max_new_tokens") && j["max_new_tokens"].is_number_integer()) d.max_new_tokens = j["max_new_tokens"];
  return d;
}

}  // namespace opchain
