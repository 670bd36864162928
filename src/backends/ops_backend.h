#pragma once
// Layer 3: a backend maps each OpType to a builder that makes the impl an nn module calls, and fills
// the per-step metadata (update_step_context). nn modules call select_backend(device_ctx) once at
// build; nothing here is looked up per step.
#include <memory>
#include <string>

#include "backends/graph_runner.h"
#include "backends/moe_comm_policy.h"
#include "backends/step_context.h"
#include "core/trace.h"
#include "ops/matmul_precision.h"
#include "ops/registry.h"

namespace opchain {

// What the model is being built for: the vendor whose kernels run, and the parallel layout.
struct DeviceContext {
  std::string vendor = "cpu";
  const Registry* registry = nullptr;  // defaults to builtin_registry()
  MoeParallelSizes parallel;
  int64_t ep_rank = 0;
  // What linear, grouped_matmul and fused_moe compute in (Note [Matmul precision]); every matmul
  // module of the model passes it to its kernel.
  MatmulPrecision matmul_precision = MatmulPrecision::F32;
};

// Base of every impl: the trace site it reports under.
class OpImplBase {
 public:
  virtual ~OpImplBase() = default;
  const TraceSite& site() const { return site_; }

 protected:
  TraceSite site_;
};

// Everything an impl builder needs to resolve kernels.
struct ImplBuildParams {
  DType dtype = DType::F32;  // the dispatch dtype (weights' dtype for weight ops)
  std::string module_path;
  std::string nn_module;
};

class OpsBackend {
 public:
  virtual ~OpsBackend() = default;
  // Human-readable backend name, e.g. "DefaultOpsBackend(cpu)".
  virtual std::string name() const = 0;
  virtual const std::string& vendor() const = 0;
  virtual const Registry& registry() const = 0;
  // Required: fill ctx.attn and ctx.moe from the engine's inputs. Called once per step, also before
  // each graph replay: it must refresh them in place (Note [Graph capture]).
  virtual void update_step_context(StepContext& ctx) const = 0;
  // Optional: the runner that captures and replays decode steps (Note [Graph capture]). Default: a
  // HostGraphRunner, right for vendors whose kernels run on the host; a CUDA vendor returns one
  // built on CUDA graphs.
  virtual std::unique_ptr<GraphRunner> make_graph_runner() const;
};

// The backend for a device context (one per vendor, shared). Throws if the vendor registered nothing.
const OpsBackend& select_backend(const DeviceContext& dev);

}  // namespace opchain
