#pragma once
// The default experts impl: runs fused_moe on this rank's experts, and when experts are spread over
// expert-parallel ranks, moves the step's tokens to them and the results back on the path the step's
// MoE metadata names (Note [Expert parallel]).
//
// Note [Expert parallel]
// With ep ranks each rank holds experts [ep_rank * E/ep, (ep_rank + 1) * E/ep) (ExpertWeights::
// first_expert) and the whole step's hidden rows (attention runs replicated or tensor-parallel, so
// every rank ends it with all rows). Each rank routes its own slice of ceil(n / ep) rows:
//  - AllGather: all-gather the slices (rows, top-k ids and weights, active flags), compute every
//    gathered (row, expert) pair whose expert is local, reduce-scatter the weighted sums back to the
//    slices' owners. The volume is independent of routing skew.
//  - AllToAll: exchange pair counts (all_to_all), send each pair's row only to the rank that owns its
//    expert (all_to_all_v), compute, send the weighted results back (all_to_all_v) and add them up.
//    Moves only the chosen experts' rows: the decode path.
// Either way the slices' outputs are then all-gathered so every rank holds the layer's full output
// for the next layer. Sums run in f32, so a rank count changes only the order of additions.
// All of it is one host step (Note [Host steps] in ops/registry.h): graph mode records and replays
// it; it reads the routing from the step's tensors each time and uses this impl's own buffers.
#include <vector>

#include "backends/op_impl.h"

namespace opchain {

class DefaultFusedMoeImpl final : public FusedMoeImpl {
 public:
  DefaultFusedMoeImpl(const OpsBackend& backend, const ImplBuildParams& p);
  void forward(const StepContext& ctx, const FusedMoeArgs& args) const override;

 private:
  void forward_expert_parallel(const StepContext& ctx, const FusedMoeArgs& args) const;
  void all_gather_path(const StepContext& ctx, const FusedMoeArgs& args, int64_t chunk) const;
  void all_to_all_path(const StepContext& ctx, const FusedMoeArgs& args, int64_t chunk) const;
  // out[m, h] = weight[i] * expert[expert[i]](x[i]) for m pairs of local experts.
  void compute_pairs(const FusedMoeArgs& args, int64_t m, const float* x, const int32_t* expert, const float* weight,
                     float* out) const;
  // This rank's slice of the step's output, all-gathered into args.out.
  void gather_slices(const FusedMoeArgs& args, int64_t chunk, const float* slice_out) const;

  const OpsBackend& backend_;
  std::unique_ptr<KernelImpl<OpType::FusedMoe>> kernel_;
  mutable MoeMetadata local_meta_;  // the local kernel's: Local, every row active
};

}  // namespace opchain
