#pragma once
// The default experts impl: checks the step's MoE comm type and launches fused_moe. Only Local runs
// in this build; AllGather/AllToAll need the distributed runtime and fail loudly instead of computing
// a wrong partial sum.
#include "backends/op_impl.h"

namespace opchain {

class DefaultFusedMoeImpl final : public FusedMoeImpl {
 public:
  DefaultFusedMoeImpl(const OpsBackend& backend, const ImplBuildParams& p);
  void forward(const StepContext& ctx, const FusedMoeArgs& args) const override;

 private:
  std::unique_ptr<KernelImpl<OpType::FusedMoe>> kernel_;
};

}  // namespace opchain
