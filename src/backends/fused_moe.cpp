#include "backends/fused_moe.h"

namespace opchain {

DefaultFusedMoeImpl::DefaultFusedMoeImpl(const OpsBackend& backend, const ImplBuildParams& p)
    : kernel_(std::make_unique<KernelImpl<OpType::FusedMoe>>(backend, p, "DefaultFusedMoeImpl")) {
  site_ = kernel_->site();
}

void DefaultFusedMoeImpl::forward(const StepContext& ctx, const FusedMoeArgs& args) const {
  if (ctx.moe.comm_type != MoeCommType::Local)
    throw UnsupportedOpError(std::string("fused_moe at ") + site_.module_path + ": MoE comm type '" +
                             moe_comm_type_name(ctx.moe.comm_type) +
                             "' needs the distributed runtime, not in this build");
  (*kernel_)(args);
}

}  // namespace opchain
