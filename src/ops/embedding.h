#pragma once
// Layer 4: the `embedding` op's arguments. Kernel signature: void(const EmbeddingArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"

namespace opchain {

// out[i, :] = weight[ids[i], :] (as f32). ids out of range are an error at the call site.
struct EmbeddingArgs {
  Tensor ids;     // i32 [n]
  Tensor weight;  // W [vocab, hidden]
  Tensor out;     // f32 [n, hidden]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = EmbeddingArgs;
    return std::tuple{Field{"ids", Role::In, &A::ids}, Field{"weight", Role::In, &A::weight},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
