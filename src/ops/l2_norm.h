#pragma once
// Layer 4: the `l2_norm` op's arguments. Kernel signature: void(const L2NormArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// In place, for each row t and head j < heads: x[t, j*d : (j+1)*d] *= 1 / sqrt(sum of squares + eps),
// in f32 (the eps sits inside the root and the sum is not a mean). Columns past heads * d are left
// alone: Gated DeltaNet normalises the q and k heads that lead each row of its conv output [q | k | v].
struct L2NormArgs {
  Tensor x;  // f32 [n, w], w >= heads * head_dim
  int64_t heads = 0;
  int64_t head_dim = 0;
  float eps = 1e-6f;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = L2NormArgs;
    return std::tuple{Field{"x", Role::InOut, &A::x}, Field{"heads", Role::Attr, &A::heads},
                      Field{"head_dim", Role::Attr, &A::head_dim}, Field{"eps", Role::Attr, &A::eps}};
  }
};

}  // namespace opchain
