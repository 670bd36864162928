#pragma once
// Layer 4: the `add_rms_norm` op's arguments. Kernel signature: void(const AddRmsNormArgs&).
#include "core/tensor.h"

namespace opchain {

// residual += x; out = rms_norm(residual) * weight. The residual stream stays in f32.
struct AddRmsNormArgs {
  Tensor x;         // f32 [n, h]
  Tensor residual;  // f32 [n, h], updated in place
  Tensor weight;    // W [h]
  Tensor out;       // f32 [n, h] (may alias x)
  float eps = 1e-6f;
};

}  // namespace opchain
