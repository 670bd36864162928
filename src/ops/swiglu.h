#pragma once
// Layer 4: the `swiglu` op's arguments. Kernel signature: void(const SwigluArgs&).
#include "core/tensor.h"

namespace opchain {

// The MoE step of the activation: out = silu(x[:, :i]) * x[:, i:] on expert-sorted rows.
struct SwigluArgs {
  Tensor x;    // f32 [m, 2i]
  Tensor out;  // f32 [m, i]
};

}  // namespace opchain
