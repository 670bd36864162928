#pragma once
// Layer 4: the `gdn_gating` op's arguments. Kernel signature: void(const GdnGatingArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// The per-token gates of a Gated DeltaNet layer, per value head h, in f32:
//   g[t, h]    = -exp(a_log[h]) * softplus(a[t, h] + dt_bias[h])   (a log-decay <= 0)
//   beta[t, h] = sigmoid(b[t, h])
// softplus(x) = log(1 + e^x), or x past 20, as torch computes it.
struct GdnGatingArgs {
  Tensor ba;       // f32 [n, 2 * nv]: b (nv columns), then a (nv columns)
  Tensor a_log;    // W [nv]
  Tensor dt_bias;  // W [nv]
  Tensor g;        // f32 [n, nv]
  Tensor beta;     // f32 [n, nv]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = GdnGatingArgs;
    return std::tuple{Field{"ba", Role::In, &A::ba}, Field{"a_log", Role::In, &A::a_log},
                      Field{"dt_bias", Role::In, &A::dt_bias}, Field{"g", Role::Out, &A::g},
                      Field{"beta", Role::Out, &A::beta}};
  }
};

}  // namespace opchain
