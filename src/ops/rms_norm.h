#pragma once
// Layer 4: the `rms_norm` op's arguments. Kernel signature: void(const RmsNormArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// out = x / sqrt(mean(x^2) + eps) * weight, per row of the last dim, in f32.
struct RmsNormArgs {
  Tensor x;       // f32 [rows, h] (any leading shape; rows = numel / h)
  Tensor weight;  // W [h]
  Tensor out;     // f32, same shape as x (may alias x)
  float eps = 1e-6f;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = RmsNormArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"weight", Role::In, &A::weight},
                      Field{"eps", Role::Attr, &A::eps}, Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
