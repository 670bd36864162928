#pragma once
// Layer 4: the `silu_and_mul` op's arguments. Kernel signature: void(const SiluAndMulArgs&).
#include "core/tensor.h"

namespace opchain {

// out = silu(x[:, :i]) * x[:, i:], the gated MLP activation.
struct SiluAndMulArgs {
  Tensor x;    // f32 [n, 2i]
  Tensor out;  // f32 [n, i]
};

}  // namespace opchain
