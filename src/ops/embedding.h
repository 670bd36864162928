#pragma once
// Layer 4: the `embedding` op's arguments. Kernel signature: void(const EmbeddingArgs&).
#include "core/tensor.h"

namespace opchain {

// out[i, :] = weight[ids[i], :] (as f32). ids out of range are an error at the call site.
struct EmbeddingArgs {
  Tensor ids;     // i32 [n]
  Tensor weight;  // W [vocab, hidden]
  Tensor out;     // f32 [n, hidden]
};

}  // namespace opchain
