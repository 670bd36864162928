#pragma once
// Layer 2: nn modules hold weights and shapes and call their impl. Each module resolves its impl once,
// at construction, from the backend that select_backend(device context) returns; forward() only
// launches. Activations come from the step's workspace.
#include <string>

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
  return ImplBuildParams{dtype, mc.path, nn_module};
}

}  // namespace opchain::nn
