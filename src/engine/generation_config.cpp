#include "engine/generation_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/input_errors.h"
#include "io/json_input.h"
#include "io/model_directory.h"

namespace opchain {

namespace {

GenerationDefaults load_unguarded(const ModelFile& file, const std::vector<int64_t>& config_eos_ids) {
  GenerationDefaults d;
  for (int64_t e : config_eos_ids) d.eos_ids.push_back(static_cast<int32_t>(e));
  if (!file.exists()) return d;
  const std::string& path = file.path;
  const nlohmann::json j = parse_json_input(*file.text, path);
  try {
    d.sampling = SamplingParams::from_generation_config(j);
  } catch (const Error& e) {
    throw FormatError(path + ": " + e.what());
  }
  if (j.contains("eos_token_id")) {
    std::vector<int32_t> ids;
    auto add = [&](const nlohmann::json& v) {
      if (!v.is_number_integer()) return;
      if (v.is_number_unsigned() ? v.get<uint64_t>() > INT32_MAX
                                 : (v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX))
        throw FormatError(path + ": eos_token_id " + v.dump() + " is not a token id");
      ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
    };
    const auto& e = j["eos_token_id"];
    if (e.is_number_integer())
      add(e);
    else if (e.is_array())
      for (const auto& v : e) add(v);
    if (!ids.empty()) d.eos_ids = ids;
  }
  if (j.contains("max_new_tokens") && j["max_new_tokens"].is_number_integer()) d.max_new_tokens = j["max_new_tokens"];
  return d;
}

}  // namespace

GenerationDefaults load_generation_defaults(const ModelDirectory& dir, const std::vector<int64_t>& config_eos_ids) {
  return guard_input(dir.generation_config.path, [&] { return load_unguarded(dir.generation_config, config_eos_ids); });
}

GenerationDefaults load_generation_defaults(const std::string& model_dir, const std::vector<int64_t>& config_eos_ids) {
  return load_generation_defaults(ModelDirectory::read(model_dir), config_eos_ids);
}

}  // namespace opchain
