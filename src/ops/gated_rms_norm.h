#pragma once
// Layer 4: the `gated_rms_norm` op's arguments. Kernel signature: void(const GatedRmsNormArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// Per head (rows of the weight's width d), norm first, then the gate, in f32:
//   out = weight * (x / sqrt(mean(x^2) + eps)) * silu(z)
// Gated DeltaNet's output norm, with a plain weight (initialised to ones, not zero-centred).
struct GatedRmsNormArgs {
  Tensor x;       // f32 [rows, d] (any leading shape; rows = numel / d)
  Tensor z;       // f32, as many elements as x
  Tensor weight;  // W [d]
  Tensor out;     // f32, as many elements as x (may alias x)
  float eps = 1e-6f;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = GatedRmsNormArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"z", Role::In, &A::z}, Field{"weight", Role::In, &A::weight},
                      Field{"eps", Role::Attr, &A::eps}, Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
