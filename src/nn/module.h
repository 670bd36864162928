#pragma once
// Layer 2: nn modules hold weights and shapes and call their impl. Each module asks the backend that
// select_backend(device context) returns for its impl once, at construction (mc.impl<OpType::X>,
// Note [Impl builders]), and holds it as the OpImpl<X> interface: nn never names a concrete impl.
// forward() only launches. Activations come from the step's workspace.
#include <string>

#include "backends/op_impl.h"
#include "backends/ops_backend.h"
#include "backends/step_context.h"

namespace opchain::nn {

// Where a module sits (for traces) and which device it builds for.
struct ModuleContext {
  const DeviceContext* device = nullptr;
  std::string path;  // "model.layers.0.self_attn"
  ModuleContext child(const std::string& name) const { return {device, path.empty() ? name : path + "." + name}; }
  const OpsBackend& backend() const { return select_backend(*device); }
  MatmulPrecision matmul_precision() const { return device->matmul_precision; }
};

inline ImplBuildParams impl_params(const ModuleContext& mc, const char* nn_module, DType dtype) {
  return ImplBuildParams{dtype, mc.path, nn_module, mc.matmul_precision()};
}

// The impl of `Op` for the module `nn_module` at mc.path, from the device's backend.
template <OpType Op>
std::unique_ptr<OpImpl<Op>> build_impl(const ModuleContext& mc, const char* nn_module, DType dtype) {
  return opchain::build_impl<Op>(mc.backend(), impl_params(mc, nn_module, dtype));
}

}  // namespace opchain::nn
