#pragma once
// Layer 4: the `gated_rms_norm` op's arguments. Kernel signature: void(const GatedRmsNormArgs&).
#include "core/tensor.h"

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
};

}  // namespace opchain
