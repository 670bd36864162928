#pragma once
// Layer 4: the `gdn_gating` op's arguments. Kernel signature: void(const GdnGatingArgs&).
#include "core/tensor.h"

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
};

}  // namespace opchain
