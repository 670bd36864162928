#pragma once
// Note [Impl builders]
// Layer 3 between nn and the kernels. Each OpType has an impl interface, OpImpl<Op>: for a
// single-kernel op, KernelOpImpl<Op> (call it on the op's Args); for the ops that decide something per
// step, an interface of their own (AttentionImpl, FusedMoeImpl, GatedDeltaRuleImpl below). A backend
// maps each OpType to a builder of that interface (OpsBackend::impl_builder); an nn module asks
// build_impl<OpType::X>(backend, params) once, at model build, and never names a concrete impl, so a
// vendor supplies its own impl for an OpType (DeviceContext::impls) without touching nn, as ONNX
// Runtime's execution providers each bring their own kernels for an op. The in-tree impls are
// default_impl_builders(). The paged attention of a layer (fill_kv_cache, then the attention kernel
// the step asks for) is the impl of OpType::PagedDecodeAttention, the op of its decode steps.
#include <memory>
#include <string>
#include <typeinfo>

#include "backends/ops_backend.h"
#include "core/error.h"

namespace opchain {

// The impl interface of a single-kernel op.
template <OpType Op>
class KernelOpImpl : public OpImplBase {
 public:
  using Args = typename OpTraits<Op>::Args;
  virtual void operator()(const Args& a) const = 0;
};

// One nn Attention call: q [n, hq, d], k/v [n, hk, d]; caches [blocks, block_size, hk, d]; out [n, hq, d].
class AttentionImpl : public OpImplBase {
 public:
  virtual void forward(const StepContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                       const Tensor& v_cache, const Tensor& out, float scale) const = 0;
};

// The experts of one MoE layer: args.meta is &ctx.moe.
class FusedMoeImpl : public OpImplBase {
 public:
  virtual void forward(const StepContext& ctx, const FusedMoeArgs& args) const = 0;
};

// The delta rule of one Gated DeltaNet layer: the impl sets args.form and args.meta (&ctx.attn).
class GatedDeltaRuleImpl : public OpImplBase {
 public:
  virtual void forward(const StepContext& ctx, GatedDeltaRuleArgs args) const = 0;
};

// The collective of a tensor-parallel layer (Note [Tensor parallel] in backends/tensor_parallel.h):
// AllReduce adds `x`'s partial sums over the tp group in place (out is x); GatherColumns puts the
// group's column blocks of x side by side in out.
enum class TpCollective : uint8_t { AllReduce, GatherColumns };
class TpCollectiveImpl : public OpImplBase {
 public:
  virtual void forward(const Tensor& x, const Tensor& out) const = 0;
};
// full_cols: GatherColumns' output width.
std::unique_ptr<TpCollectiveImpl> build_tp_collective(const OpsBackend& backend, TpCollective kind,
                                                      const ImplBuildParams& p, int64_t full_cols = 0);

template <OpType Op>
struct ImplTraits {
  using Interface = KernelOpImpl<Op>;
};
template <>
struct ImplTraits<OpType::PagedDecodeAttention> {
  using Interface = AttentionImpl;
};
template <>
struct ImplTraits<OpType::FusedMoe> {
  using Interface = FusedMoeImpl;
};
template <>
struct ImplTraits<OpType::GatedDeltaRule> {
  using Interface = GatedDeltaRuleImpl;
};
template <OpType Op>
using OpImpl = typename ImplTraits<Op>::Interface;

// The impl of `Op` from the backend's builder; throws when the builder is missing or makes something
// other than OpImpl<Op>, naming the op and the backend.
template <OpType Op>
std::unique_ptr<OpImpl<Op>> build_impl(const OpsBackend& backend, const ImplBuildParams& p) {
  const ImplBuilder& builder = backend.impl_builder(Op);
  const std::string what = std::string(op_info(Op).name) + " impl for " + p.module_path + " on " + backend.name();
  if (!builder) throw UnsupportedOpError("no " + what);
  std::unique_ptr<OpImplBase> impl = builder(backend, p);
  if (!impl) throw UnsupportedOpError("the builder of the " + what + " returned nothing");
  auto* typed = dynamic_cast<OpImpl<Op>*>(impl.get());
  if (!typed) {
    const OpImplBase& made = *impl;
    throw UnsupportedOpError("the builder of the " + what + " returned a " + typeid(made).name() + ", not an " +
                             typeid(OpImpl<Op>).name());
  }
  impl.release();
  return std::unique_ptr<OpImpl<Op>>(typed);
}

// The default impl of a single-kernel op: resolve the kernel for (vendor, dtype) at build, launch it
// per call, traced from the op's field list.
template <OpType Op>
class KernelImpl final : public KernelOpImpl<Op> {
 public:
  using Args = typename OpTraits<Op>::Args;
  KernelImpl(const OpsBackend& backend, const ImplBuildParams& p, const char* impl_name) {
    kernel_ = resolve_kernel<Op>(backend.registry(), backend.vendor(), p.dtype);
    this->site_ = TraceSite{p.module_path, p.nn_module, impl_name};
  }
  void operator()(const Args& a) const override { launch(kernel_, a, &this->site_); }
  const Kernel<Op>& kernel() const { return kernel_; }

 private:
  Kernel<Op> kernel_;
};

template <OpType Op>
std::unique_ptr<KernelImpl<Op>> build_kernel_impl(const OpsBackend& backend, const ImplBuildParams& p) {
  static const std::string impl_name = "Default" + std::string(op_info(Op).name) + "Impl";
  return std::make_unique<KernelImpl<Op>>(backend, p, impl_name.c_str());
}

}  // namespace opchain
