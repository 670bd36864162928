#pragma once
// The default impl of a single-kernel op: resolve the kernel for (vendor, dtype) at build, launch it
// per call. Ops that decide something per step (attention, MoE) have their own impls beside it.
#include "backends/ops_backend.h"

namespace opchain {

template <OpType Op>
class KernelImpl : public OpImplBase {
 public:
  using Args = typename OpTraits<Op>::Args;
  KernelImpl(const OpsBackend& backend, const ImplBuildParams& p, const char* impl_name) {
    kernel_ = resolve_kernel<Op>(backend.registry(), backend.vendor(), p.dtype);
    site_ = TraceSite{p.module_path, p.nn_module, impl_name};
  }
  void operator()(const Args& a) const {
    launch(kernel_, a, &site_);  // traced from the op's field list (Note [Op fields])
  }
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
