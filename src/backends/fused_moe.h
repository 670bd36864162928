#pragma once
// The experts impl: checks the step's MoE comm type and launches fused_moe. Only Local runs in this
// build; AllGather/AllToAll need the distributed runtime and fail loudly instead of computing a
// wrong partial sum.
#include "backends/op_impl.h"

namespace opchain {

class FusedMoeImpl : public OpImplBase {
 public:
  FusedMoeImpl(const OpsBackend& backend, const ImplBuildParams& p);
  void forward(const StepContext& ctx, const FusedMoeArgs& args) const;

 private:
  std::unique_ptr<KernelImpl<OpType::FusedMoe>> kernel_;
};

}  // namespace opchain
