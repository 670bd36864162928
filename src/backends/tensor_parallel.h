#pragma once
// Layer 3: the collectives of tensor-parallel layers (Note [Tensor parallel]). nn::Linear builds one
// when its weight is a shard; each runs as a host step (Note [Host steps] in ops/registry.h), so graph
// mode records it between the kernels around it.
//
// Note [Tensor parallel]
// A tensor-parallel group of T ranks splits a layer's weight (vLLM's scheme):
//  - column-parallel (q/k/v, gate/up, lm_head): each rank holds a block of output rows and computes
//    its block of the output; the next layer consumes it as is (attention heads, the MLP's
//    intermediate), or, for lm_head, the blocks are gathered into the whole vocabulary;
//  - row-parallel (o_proj, down_proj): each rank holds the matching block of input columns and
//    computes a partial sum of the whole output; an all-reduce adds the partials. A bias is added on
//    tp rank 0 only.
// KV heads are split when T divides them, else each rank holds the one KV head its query heads read
// (replicated T / kv_heads times). A Gated DeltaNet layer splits the same way by heads: value heads in
// blocks, key heads split with them or, when T exceeds them, replicated to the ranks whose value heads
// read them; out_proj is row-parallel. Embeddings, norms and routers are replicated.
#include <string>

#include "backends/op_impl.h"

namespace opchain {

// x (f32, any shape) := sum over the tp group of x.
class TpAllReduceImpl final : public TpCollectiveImpl {
 public:
  TpAllReduceImpl(const OpsBackend& backend, const ImplBuildParams& p);
  void forward(const Tensor& x, const Tensor& out) const override;

 private:
  const OpsBackend& backend_;
};

// out [rows, full_cols] := the tp group's column blocks of local [rows, ceil(full_cols / T)] side by
// side, rank order; the last rank's block may be narrower (vocabularies that T does not divide).
class TpGatherColumnsImpl final : public TpCollectiveImpl {
 public:
  TpGatherColumnsImpl(const OpsBackend& backend, const ImplBuildParams& p, int64_t full_cols);
  void forward(const Tensor& local, const Tensor& out) const override;
  // The columns rank `rank` of `ranks` holds of `full_cols`: [begin, end).
  static std::pair<int64_t, int64_t> block(int64_t full_cols, int64_t rank, int64_t ranks);

 private:
  const OpsBackend& backend_;
  int64_t full_cols_;
};

}  // namespace opchain
