#pragma once
// Layer 4: the `apply_rotary_pos_emb` op's arguments. Kernel signature: void(const ApplyRotaryPosEmbArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// Rotate-half RoPE in place on the first rd = 2 * cos.size(1) channels of each head: channel i < rd/2
// pairs with i + rd/2; channels [rd, d) pass unchanged. rd == d is full RoPE; rd < d is the partial
// rotary of Qwen3-Next / Qwen3.5 (partial_rotary_factor), whose cos/sin tables cover rd only.
struct ApplyRotaryPosEmbArgs {
  Tensor q;    // f32 [n, q_heads, d]
  Tensor k;    // f32 [n, kv_heads, d]
  Tensor cos;  // f32 [n, rd/2], rd even and <= d
  Tensor sin;  // f32 [n, rd/2]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = ApplyRotaryPosEmbArgs;
    return std::tuple{Field{"q", Role::InOut, &A::q}, Field{"k", Role::InOut, &A::k}, Field{"cos", Role::In, &A::cos},
                      Field{"sin", Role::In, &A::sin}};
  }
};

}  // namespace opchain
