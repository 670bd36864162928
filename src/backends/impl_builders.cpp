// The in-tree impls, one builder per OpType (Note [Impl builders]).
#include "backends/attention.h"
#include "backends/fused_moe.h"
#include "backends/gated_delta_rule.h"

namespace opchain {

namespace {

template <class Impl>
ImplBuilder builder_of() {
  return [](const OpsBackend& backend, const ImplBuildParams& p) -> std::unique_ptr<OpImplBase> {
    return std::make_unique<Impl>(backend, p);
  };
}

template <OpType Op>
ImplBuilder kernel_builder() {
  return [](const OpsBackend& backend, const ImplBuildParams& p) -> std::unique_ptr<OpImplBase> {
    return build_kernel_impl<Op>(backend, p);
  };
}

ImplBuilderTable make_default_impl_builders() {
  ImplBuilderTable t;
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) t.set(OpType::name, kernel_builder<OpType::name>());
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
  t.set(OpType::PagedDecodeAttention, builder_of<DefaultAttentionImpl>());
  t.set(OpType::FusedMoe, builder_of<DefaultFusedMoeImpl>());
  t.set(OpType::GatedDeltaRule, builder_of<DefaultGatedDeltaRuleImpl>());
  return t;
}

}  // namespace

const ImplBuilderTable& default_impl_builders() {
  static const ImplBuilderTable table = make_default_impl_builders();
  return table;
}

const ImplBuilder& OpsBackend::impl_builder(OpType op) const { return default_impl_builders().get(op); }

}  // namespace opchain
