#include "nn/rotary_embedding.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace opchain::nn {

namespace {

std::vector<float> default_inv_freq(int64_t dim, float base) {
  std::vector<float> f(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i)
    f[static_cast<size_t>(i)] = 1.0f / std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim));
  return f;
}

double yarn_get_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

RotaryEmbedding::RotaryEmbedding(const ModuleContext& mc, int64_t head_dim, double rope_theta, const RopeScaling& s,
                                 int64_t max_position_embeddings)
    : dim_(head_dim), theta_(rope_theta), scaling_(s), max_pos_(max_position_embeddings) {
  const float base = static_cast<float>(rope_theta);
  inv_freq_ = default_inv_freq(dim_, base);
  const float factor = static_cast<float>(s.factor);
  switch (s.type) {
    case RopeScalingType::None:
    case RopeScalingType::Dynamic:  // recomputed per step once positions pass max_position_embeddings
      break;
    case RopeScalingType::Linear:
      for (auto& f : inv_freq_) f /= factor;
      break;
    case RopeScalingType::Llama3: {
      const float old_ctx = static_cast<float>(s.original_max_position_embeddings);
      const float low_wavelen = old_ctx / static_cast<float>(s.low_freq_factor);
      const float high_wavelen = old_ctx / static_cast<float>(s.high_freq_factor);
      for (auto& f : inv_freq_) {
        const float wavelen = 2.0f * std::numbers::pi_v<float> / f;
        float scaled = wavelen > low_wavelen ? f / factor : f;
        const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
        if (medium) {
          const float smooth = (old_ctx / wavelen - static_cast<float>(s.low_freq_factor)) /
                               static_cast<float>(s.high_freq_factor - s.low_freq_factor);
          scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
        }
        f = scaled;
      }
      break;
    }
    case RopeScalingType::Yarn: {
      const double orig = s.original_max_position_embeddings > 0
                              ? static_cast<double>(s.original_max_position_embeddings)
                              : static_cast<double>(max_pos_);
      double attn = 1.0;
      if (s.attention_factor)
        attn = *s.attention_factor;
      else if (s.mscale && s.mscale_all_dim && *s.mscale && *s.mscale_all_dim)
        attn = yarn_get_mscale(s.factor, *s.mscale) / yarn_get_mscale(s.factor, *s.mscale_all_dim);
      else
        attn = yarn_get_mscale(s.factor, 1.0);
      attention_scaling_ = static_cast<float>(attn);
      auto correction_dim = [&](double rotations) {
        return (static_cast<double>(dim_) * std::log(orig / (rotations * 2 * std::numbers::pi))) /
               (2 * std::log(rope_theta));
      };
      double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
      if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim_ - 1));
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < dim_ / 2; ++i) {
        const float pos_freq = std::pow(base, static_cast<float>(2 * i) / static_cast<float>(dim_));
        const float extrapolation = 1.0f / pos_freq;
        const float interpolation = 1.0f / (factor * pos_freq);
        float ramp = static_cast<float>((static_cast<double>(i) - low) / (high - low));
        ramp = std::clamp(ramp, 0.0f, 1.0f);
        const float extrapolation_factor = 1.0f - ramp;
        inv_freq_[static_cast<size_t>(i)] =
            interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
      }
      break;
    }
  }
  inv_freq_tensor_ = Tensor::empty(DType::F32, {static_cast<int64_t>(inv_freq_.size())});
  std::copy(inv_freq_.begin(), inv_freq_.end(), inv_freq_tensor_.data<float>());
  dynamic_tensor_ = Tensor::empty(DType::F32, {static_cast<int64_t>(inv_freq_.size())});
  impl_ = build_impl<OpType::RotaryEmbedding>(mc, "RotaryEmbedding", DType::F32);
}

// transformers' dynamic NTK: past max_position_embeddings the base grows with the sequence length.
std::vector<float> RotaryEmbedding::dynamic_inv_freq(int64_t seq_len) const {
  const double factor = scaling_.factor;
  const double base =
      theta_ * std::pow((factor * static_cast<double>(seq_len) / static_cast<double>(max_pos_)) - (factor - 1),
                        static_cast<double>(dim_) / static_cast<double>(dim_ - 2));
  return default_inv_freq(dim_, static_cast<float>(base));
}

std::string RotaryEmbedding::graph_capture_blocker() const {
  if (scaling_.type != RopeScalingType::Dynamic) return {};
  return "rope_scaling 'dynamic' (NTK) recomputes inv_freq on the host from each step's positions";
}

RotaryEmbedding::CosSin RotaryEmbedding::forward(StepContext& ctx) const {
  if (ctx.capturing && scaling_.type == RopeScalingType::Dynamic) throw GraphCaptureError(graph_capture_blocker());
  const int64_t n = ctx.positions.numel(), half = dim_ / 2;
  CosSin cs{ctx.workspace->alloc(DType::F32, {n, half}), ctx.workspace->alloc(DType::F32, {n, half})};
  Tensor inv = inv_freq_tensor_;
  if (scaling_.type == RopeScalingType::Dynamic) {
    int64_t max_position = 0;
    for (int64_t i = 0; i < n; ++i) max_position = std::max<int64_t>(max_position, ctx.positions.data<int32_t>()[i]);
    if (max_position + 1 > max_pos_) {
      auto f = dynamic_inv_freq(max_position + 1);
      std::copy(f.begin(), f.end(), dynamic_tensor_.data<float>());
      inv = dynamic_tensor_;
    }
  }
  (*impl_)(RotaryEmbeddingArgs{ctx.positions, inv, attention_scaling_, cs.cos, cs.sin});
  return cs;
}

ApplyRotaryEmb::ApplyRotaryEmb(const ModuleContext& mc)
    : impl_(build_impl<OpType::ApplyRotaryPosEmb>(mc, "ApplyRotaryEmb", DType::F32)) {}

void ApplyRotaryEmb::forward(const Tensor& q, const Tensor& k, const RotaryEmbedding::CosSin& cs) const {
  (*impl_)(ApplyRotaryPosEmbArgs{q, k, cs.cos, cs.sin});
}

}  // namespace opchain::nn
