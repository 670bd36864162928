#pragma once
// generation_config.json: default sampling and the eos ids that stop generation (falling back to
// config.json's eos_token_id when the file is absent).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace opchain {

struct GenerationDefaults {
  SamplingParams sampling;  // greedy when the file says do_sample false
  std::vector<int32_t> eos_ids;
  int64_t max_new_tokens = 0;  // 0: not set
};

struct ModelDirectory;

// From the directory already read (Note [Model directory]); the string form reads it first.
GenerationDefaults load_generation_defaults(const ModelDirectory& dir, const std::vector<int64_t>& config_eos_ids);
GenerationDefaults load_generation_defaults(const std::string& model_dir, const std::vector<int64_t>& config_eos_ids);

}  // namespace opchain
