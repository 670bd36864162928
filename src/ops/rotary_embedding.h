#pragma once
// Layer 4: the `rotary_embedding` op's arguments. Kernel signature: void(const RotaryEmbeddingArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// cos/sin tables of the rotary embedding at each position: angle = position * inv_freq[j]
// (in f32, as transformers computes it), times attention_scaling.
struct RotaryEmbeddingArgs {
  Tensor positions;  // i32 [n]
  Tensor inv_freq;   // f32 [d/2]
  float attention_scaling = 1.0f;
  Tensor cos;  // f32 [n, d/2]
  Tensor sin;  // f32 [n, d/2]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = RotaryEmbeddingArgs;
    return std::tuple{Field{"positions", Role::In, &A::positions}, Field{"inv_freq", Role::In, &A::inv_freq},
                      Field{"attention_scaling", Role::Attr, &A::attention_scaling}, Field{"cos", Role::Out, &A::cos},
                      Field{"sin", Role::Out, &A::sin}};
  }
};

}  // namespace opchain
