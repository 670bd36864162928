#pragma once
// Layer 4: the `zero_centered_rms_norm` op's arguments. Kernel signature: void(const ZeroCenteredRmsNormArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// out = x / sqrt(mean(x^2) + eps) * (1 + weight), per row of the last dim, in f32: the RMSNorm of
// Qwen3-Next and Qwen3.5, whose checkpoints store weight - 1 (initialised to zeros). With a residual,
// residual += x first (in place) and the sum is normalised: the pre-norm residual add, fused.
struct ZeroCenteredRmsNormArgs {
  Tensor x;         // f32 [rows, h] (any leading shape; rows = numel / h)
  Tensor residual;  // f32 [rows, h], optional
  Tensor weight;    // W [h], the stored (zero-centred) weight
  Tensor out;       // f32, same shape as x (may alias x)
  float eps = 1e-6f;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = ZeroCenteredRmsNormArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"residual", Role::InOut, &A::residual},
                      Field{"weight", Role::In, &A::weight}, Field{"eps", Role::Attr, &A::eps},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
