#pragma once
// Layer 4: the `rms_norm` op's arguments. Kernel signature: void(const RmsNormArgs&).
#include "core/tensor.h"

namespace opchain {

// out = x / sqrt(mean(x^2) + eps) * weight, per row of the last dim, in f32.
struct RmsNormArgs {
  Tensor x;       // f32 [rows, h] (any leading shape; rows = numel / h)
  Tensor weight;  // W [h]
  Tensor out;     // f32, same shape as x (may alias x)
  float eps = 1e-6f;
};

}  // namespace opchain
