#include "nn/embedding.h"

namespace opchain::nn {

Embedding::Embedding(const ModuleContext& mc, Tensor weight)
    : weight_(std::move(weight)), impl_(build_impl<OpType::Embedding>(mc, "Embedding", weight_.dtype())) {}

Tensor Embedding::forward(StepContext& ctx, const Tensor& ids) const {
  Tensor out = ctx.workspace->alloc(DType::F32, {ids.numel(), weight_.size(1)});
  (*impl_)(EmbeddingArgs{ids, weight_, out});
  return out;
}

}  // namespace opchain::nn
