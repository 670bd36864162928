#pragma once
// Layer 4: the `causal_conv1d` op's arguments. Kernel signature: void(const CausalConv1dArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/step_metadata.h"

namespace opchain {

// Depthwise causal convolution over time followed by silu, per sequence of the step (the varlen
// layout of meta: q_start_loc, q_seqlens). For token t of a sequence and channel c:
//   out[t, c] = silu(sum_{j<K} weight[c, j] * u[t - K + 1 + j, c])
// a cross-correlation: weight[c, K-1] multiplies the current input. Inputs before the step's first
// token are the sequence's conv state (its last K-1 inputs, slot meta->state_slots[b]) when it has
// cached tokens (kv_seqlens > q_seqlens), else zeros. Afterwards the slot holds the sequence's last
// K-1 inputs. A sequence whose slot is -1 (graph padding) reads and writes no state; its rows are 0.
struct CausalConv1dArgs {
  Tensor x;           // f32 [n, c], the conv inputs (the projected q | k | v)
  Tensor weight;      // W [c, K] (Hugging Face's [c, 1, K], viewed)
  Tensor conv_state;  // f32 [slots, K-1, c], updated in place
  Tensor out;         // f32 [n, c]
  const AttnMetadata* meta = nullptr;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = CausalConv1dArgs;
    return std::tuple{Field{"x", Role::In, &A::x}, Field{"weight", Role::In, &A::weight},
                      Field{"conv_state", Role::InOut, &A::conv_state}, Field{"meta", Role::Meta, &A::meta},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
