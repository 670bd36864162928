#pragma once
// Layer 3: a backend maps each OpType to a builder that makes the impl an nn module calls, and fills
// the per-step metadata (update_step_context). nn modules call select_backend(device_ctx) once at
// build and ask it for their impls (Note [Impl builders] in backends/op_impl.h); nothing here is
// looked up per step.
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backends/graph_runner.h"
#include "backends/moe_comm_policy.h"
#include "backends/step_context.h"
#include "core/trace.h"
#include "ops/matmul_precision.h"
#include "ops/registry.h"

namespace opchain {

class Communicator;

// Where this process sits among the ranks that share one model (Note [Communicator] in
// backends/communicator.h). A process alone: no communicators, sizes 1.
struct ParallelPlacement {
  Communicator* world = nullptr;  // every rank; the driver broadcasts each step's inputs on it
  Communicator* tp = nullptr;     // this rank's tensor-parallel group (heads, MLP and vocab shards)
  Communicator* ep = nullptr;     // this rank's expert-parallel group (experts split over it)
  int64_t tp_rank = 0, tp_size = 1;
  int64_t ep_rank = 0, ep_size = 1;
  // --moe-comm allgather|alltoall: the MoE path every step takes when ep_size > 1; else the policy.
  std::optional<MoeCommType> moe_comm;
  bool distributed() const { return tp_size > 1 || ep_size > 1; }
};

// What the model is being built for: the vendor whose kernels run, and the parallel layout.
class ImplBuilderTable;
struct DeviceContext {
  std::string vendor = "cpu";
  // Required: the kernels. The engine passes the built-in vendors' (builtin_registry() in
  // vendors/builtin_vendors.h); layer 3 does not know which vendors were built.
  const Registry* registry = nullptr;
  // Optional: impls a vendor supplies for some OpTypes, over the default ones (Note [Impl builders]).
  // Must outlive every backend selected with it.
  const ImplBuilderTable* impls = nullptr;
  MoeParallelSizes parallel;
  int64_t ep_rank = 0;
  // The ranks' communicators and this rank's shard; `parallel` and `ep_rank` agree with it.
  ParallelPlacement placement;
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
  MatmulPrecision precision = MatmulPrecision::F32;  // the model's (DeviceContext::matmul_precision)
};

class OpsBackend;
// Makes the impl of one OpType for one nn module; it returns an OpImpl<Op> (backends/op_impl.h),
// which build_impl checks.
using ImplBuilder = std::function<std::unique_ptr<OpImplBase>(const OpsBackend&, const ImplBuildParams&)>;

// OpType -> builder. An unset entry falls back to the default impl (default_impl_builders()).
class ImplBuilderTable {
 public:
  void set(OpType op, ImplBuilder builder) { builders_[static_cast<size_t>(op)] = std::move(builder); }
  // Empty when unset.
  const ImplBuilder& get(OpType op) const { return builders_[static_cast<size_t>(op)]; }

 private:
  std::array<ImplBuilder, kNumOps> builders_;
};

// The in-tree impls: KernelImpl<Op> for every single-kernel op, DefaultAttentionImpl,
// DefaultFusedMoeImpl and DefaultGatedDeltaRuleImpl for the ops that decide per step.
const ImplBuilderTable& default_impl_builders();

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
  // Optional: the builder of the impl for `op`. Default: default_impl_builders().get(op).
  virtual const ImplBuilder& impl_builder(OpType op) const;
  // The parallel layout the backend was selected for. Impls reach the collectives through it
  // (tp(), ep()), which are the single-process communicator when the placement has none.
  virtual const ParallelPlacement& placement() const = 0;
  Communicator& tp() const;
  Communicator& ep() const;
};

// The backend for a device context (one per vendor, registry and impl table; shared). Throws if the
// context has no registry or the vendor registered nothing.
const OpsBackend& select_backend(const DeviceContext& dev);

}  // namespace opchain
