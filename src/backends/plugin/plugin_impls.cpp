#include "backends/plugin/plugin_impls.h"

#include "backends/gated_delta_rule.h"
#include "backends/graph_runner.h"
#include "backends/op_impl.h"
#include "ops/abi_marshal.h"

namespace opchain {

namespace {

constexpr size_t kErrSize = 512;

std::string status_text(int32_t status, char* err) {
  err[kErrSize - 1] = '\0';
  return "status " + std::to_string(status) + (err[0] ? ": " + std::string(err) : std::string(" (no message)"));
}

// The plugin's state for one nn module (Note [Plugin impls]): made at build, freed with the impl.
class PluginHandle {
 public:
  PluginHandle(std::shared_ptr<const PluginRuntime> rt, PluginImpl impl, OpType op, const ImplBuildParams& p)
      : rt_(std::move(rt)), impl_(std::move(impl)), op_(op), module_path_(p.module_path) {
    if (!impl_.def->create) return;
    const oc_impl_info info{static_cast<int32_t>(p.dtype), 0, p.module_path.c_str(), p.nn_module.c_str()};
    char err[kErrSize] = {0};
    const int32_t status = impl_.def->create(&info, rt_->user_data, &handle_, err, sizeof err);
    if (status != OC_STATUS_OK)
      throw VendorPluginError(plugin_label(*rt_) + ": impl " + impl_.name + " for " + std::string(op_key(op_)) + "(" +
                              std::string(dtype_name(p.dtype)) + ") at " + module_path_ + ": create failed with " +
                              status_text(status, err));
  }
  ~PluginHandle() {
    if (impl_.def->destroy) impl_.def->destroy(handle_, rt_->user_data);
  }
  PluginHandle(const PluginHandle&) = delete;
  PluginHandle& operator=(const PluginHandle&) = delete;

  const PluginRuntime& runtime() const { return *rt_; }
  const std::string& name() const { return impl_.name; }

  // Note [Plugin impls]: nothing a graph could replay.
  void refuse_capture() const {
    if (LaunchRecorder::active() && detail::launch_depth() == 0)
      throw GraphCaptureError("cannot capture a graph: plugin impl '" + impl_.name + "' (op " +
                              std::string(op_key(op_)) + ", vendor '" + rt_->vendor + "') at " + module_path_ +
                              " runs eagerly only in vendor ABI 1.1. Run with --eager (Note [Plugin impls])");
  }

  void run(CallMarshal& m, const oc_step_info* step) const {
    char err[kErrSize] = {0};
    const int32_t status = impl_.def->run(handle_, m.args(), m.size(), step, rt_->user_data, err, sizeof err);
    if (status == OC_STATUS_OK) return m.copy_back();
    throw VendorPluginError(plugin_label(*rt_) + ": impl " + impl_.name + " for " + std::string(op_key(op_)) + " at " +
                            module_path_ + " failed with " + status_text(status, err));
  }

 private:
  std::shared_ptr<const PluginRuntime> rt_;
  PluginImpl impl_;
  OpType op_;
  std::string module_path_;
  void* handle_ = nullptr;
};

// A single-kernel op: the op's fields, the metadata they carry as the step.
template <OpType Op>
class PluginKernelOpImpl final : public KernelOpImpl<Op> {
 public:
  using Args = typename OpTraits<Op>::Args;
  PluginKernelOpImpl(std::unique_ptr<PluginHandle> h, const ImplBuildParams& p) : h_(std::move(h)) {
    this->site_ = TraceSite{p.module_path, p.nn_module, h_->name()};
  }
  void operator()(const Args& a) const override {
    h_->refuse_capture();
    CallMarshal m(h_->runtime());
    m.add_fields(a);
    h_->run(m, m.step_info());
  }

 private:
  std::unique_ptr<PluginHandle> h_;
};

// A layer's whole attention (the fields oc_impl_def documents for "paged_decode_attention").
class PluginAttentionImpl final : public AttentionImpl {
 public:
  PluginAttentionImpl(std::unique_ptr<PluginHandle> h, const ImplBuildParams& p) : h_(std::move(h)) {
    site_ = TraceSite{p.module_path, p.nn_module, h_->name()};
  }
  void forward(const StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
               const Tensor& v_cache, const Tensor& out, float scale) const override {
    h_->refuse_capture();
    CallMarshal m(h_->runtime());
    m.add("q", Role::In, q);
    m.add("k", Role::In, k);
    m.add("v", Role::In, v);
    m.add("k_cache", Role::InOut, k_cache);
    m.add("v_cache", Role::InOut, v_cache);
    m.add("scale", Role::Attr, scale);
    const AttnMetadata* meta = &ctx.attn;
    m.add("meta", Role::Meta, meta);
    m.add("out", Role::Out, out);
    h_->run(m, m.step_info(&ctx.attn, &ctx.moe, &ctx.positions));
  }

 private:
  std::unique_ptr<PluginHandle> h_;
};

class PluginFusedMoeImpl final : public FusedMoeImpl {
 public:
  PluginFusedMoeImpl(std::unique_ptr<PluginHandle> h, const ImplBuildParams& p) : h_(std::move(h)) {
    site_ = TraceSite{p.module_path, p.nn_module, h_->name()};
  }
  void forward(const StepContext& ctx, const FusedMoeArgs& args) const override {
    h_->refuse_capture();
    CallMarshal m(h_->runtime());
    m.add_fields(args);
    h_->run(m, m.step_info(&ctx.attn, &ctx.moe, &ctx.positions));
  }

 private:
  std::unique_ptr<PluginHandle> h_;
};

class PluginGatedDeltaRuleImpl final : public GatedDeltaRuleImpl {
 public:
  PluginGatedDeltaRuleImpl(std::unique_ptr<PluginHandle> h, const ImplBuildParams& p) : h_(std::move(h)) {
    site_ = TraceSite{p.module_path, p.nn_module, h_->name()};
  }
  void forward(const StepContext& ctx, GatedDeltaRuleArgs args) const override {
    h_->refuse_capture();
    args.form = select_delta_rule_form(ctx.attn);  // as the default impl: the host picks the form
    args.meta = &ctx.attn;
    CallMarshal m(h_->runtime());
    m.add_fields(args);
    h_->run(m, m.step_info(&ctx.attn, &ctx.moe, &ctx.positions));
  }

 private:
  std::unique_ptr<PluginHandle> h_;
};

template <OpType Op>
ImplBuilder builder_for(std::shared_ptr<const PluginRuntime> rt, PluginImpl impl) {
  return [rt, impl](const OpsBackend&, const ImplBuildParams& p) -> std::unique_ptr<OpImplBase> {
    auto h = std::make_unique<PluginHandle>(rt, impl, Op, p);
    if constexpr (Op == OpType::PagedDecodeAttention)
      return std::make_unique<PluginAttentionImpl>(std::move(h), p);
    else if constexpr (Op == OpType::FusedMoe)
      return std::make_unique<PluginFusedMoeImpl>(std::move(h), p);
    else if constexpr (Op == OpType::GatedDeltaRule)
      return std::make_unique<PluginGatedDeltaRuleImpl>(std::move(h), p);
    else
      return std::make_unique<PluginKernelOpImpl<Op>>(std::move(h), p);
  };
}

}  // namespace

void add_plugin_impl_builders(const PluginImplSet& impls, ImplBuilderTable& table) {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol)             \
  if (const auto& i = impls.impls[static_cast<size_t>(OpType::name)]) \
    table.set(OpType::name, builder_for<OpType::name>(impls.runtime, *i));
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}

}  // namespace opchain
