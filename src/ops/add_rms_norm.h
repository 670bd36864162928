#pragma once
// Layer 4: the `add_rms_norm` op's arguments. Kernel signature: void(const AddRmsNormArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// residual += x; out = rms_norm(residual) * weight. The residual stream stays in f32.
struct AddRmsNormArgs {
  Tensor x;         // f32 [n, h]
  Tensor residual;  // f32 [n, h], updated in place
  Tensor weight;    // W [h]
  Tensor out;       // f32 [n, h] (may alias x)
  float eps = 1e-6f;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = AddRmsNormArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"residual", Role::InOut, &A::residual},
                      Field{"weight", Role::In, &A::weight}, Field{"eps", Role::Attr, &A::eps},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
