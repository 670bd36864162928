#pragma once
// The rope_scaling of a Hugging Face config, as data: io reads it from config.json, nn's
// RotaryEmbedding computes inv_freq from it. Here, beside both, so that nn does not include io.
#include <cstdint>
#include <optional>

namespace opchain {

enum class RopeScalingType { None, Linear, Dynamic, Yarn, Llama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
};

}  // namespace opchain
