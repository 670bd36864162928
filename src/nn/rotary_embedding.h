#pragma once
#include <vector>

#include "backends/op_impl.h"
#include "core/rope_scaling.h"
#include "nn/module.h"

namespace opchain::nn {

// Rotary position embedding: builds inv_freq from rope_theta and the rope_scaling type exactly as
// transformers' ROPE_INIT_FUNCTIONS do (in f32), and produces cos/sin [n, d/2] for the step.
class RotaryEmbedding {
 public:
  RotaryEmbedding(const ModuleContext& mc, int64_t head_dim, double rope_theta, const RopeScaling& scaling,
                  int64_t max_position_embeddings);
  struct CosSin {
    Tensor cos, sin;
  };
  CosSin forward(StepContext& ctx) const;
  // Non-empty when a captured graph could not replay this module (dynamic NTK picks inv_freq on the
  // host from each step's positions): see Note [Graph capture].
  std::string graph_capture_blocker() const;
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  float attention_scaling() const { return attention_scaling_; }

 private:
  std::vector<float> dynamic_inv_freq(int64_t seq_len) const;
  int64_t dim_;
  double theta_;
  RopeScaling scaling_;
  int64_t max_pos_;
  std::vector<float> inv_freq_;
  float attention_scaling_ = 1.0f;
  Tensor inv_freq_tensor_;
  mutable Tensor dynamic_tensor_;
  std::unique_ptr<OpImpl<OpType::RotaryEmbedding>> impl_;
};

// Applies the rotation to q and k in place.
class ApplyRotaryEmb {
 public:
  explicit ApplyRotaryEmb(const ModuleContext& mc);
  void forward(const Tensor& q, const Tensor& k, const RotaryEmbedding::CosSin& cs) const;

 private:
  std::unique_ptr<OpImpl<OpType::ApplyRotaryPosEmb>> impl_;
};

}  // namespace opchain::nn
