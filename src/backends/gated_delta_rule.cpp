#include "backends/gated_delta_rule.h"

namespace opchain {

DeltaRuleForm select_delta_rule_form(const AttnMetadata& meta) {
  return meta.is_decoding || meta.max_q_seqlen <= 1 ? DeltaRuleForm::Recurrent : DeltaRuleForm::Chunked;
}

DefaultGatedDeltaRuleImpl::DefaultGatedDeltaRuleImpl(const OpsBackend& backend, const ImplBuildParams& p)
    : kernel_(std::make_unique<KernelImpl<OpType::GatedDeltaRule>>(backend, p, "DefaultGatedDeltaRuleImpl")) {
  site_ = kernel_->site();
}

void DefaultGatedDeltaRuleImpl::forward(const StepContext& ctx, GatedDeltaRuleArgs args) const {
  args.form = select_delta_rule_form(ctx.attn);
  args.meta = &ctx.attn;
  (*kernel_)(args);
}

}  // namespace opchain
