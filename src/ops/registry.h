#pragma once
// Layer 4: the one kernel registry. Vendors register (op, dtype) -> function pointer with an explicit
// register_<vendor>_kernels(Registry&); modules resolve each kernel once at model build.
// Note [Resolve at build]: a missing key/dtype is an UnsupportedOpError at build that names the op,
// key, dtype, vendor and what does exist; the step loop never looks anything up.
#include <functional>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/trace.h"
#include "ops/op_fields.h"
#include "ops/op_table.h"
#include "ops/step_metadata.h"

namespace opchain {

struct KernelFlags {
  // Safe to record in a graph and replay with the same bound arguments: it reads sizes only from its
  // tensors and metadata (never from host values frozen at capture), and it does not allocate.
  bool capture_safe = true;
};

struct KernelEntry {
  OpType op;
  std::string vendor;
  DType dtype;
  std::string kernel_name;  // "cpu::rms_norm_bf16"
  void (*fn)() = nullptr;   // type-erased OpTraits<op>::Fn
  KernelFlags flags;
  std::source_location where;
};

// Note [Vendor fallback]
// A vendor may name a fallback vendor (a plugin that covers a subset of ops falls back to cpu):
// resolve(op, vendor, dtype) takes the vendor's own kernel where it has one, else resolves the same
// (op, dtype) from the fallback, and so on down the chain. The entry returned is the kernel that runs,
// so its `vendor` (which traces, `opchain align` chains and `opchain ops` show) is the vendor the op
// actually resolved to. find() never falls back.
struct PluginImplSet;  // ops/abi_marshal.h
struct VendorInfo {
  std::string fallback;  // empty: none
  std::string origin;    // where the vendor came from, for messages: a plugin's path
  // Optional: called at the end of each step's update_step_context, after the metadata is filled
  // (a plugin's hook, vendors/plugin_loader.h). Throws to fail the step.
  std::function<void(const AttnMetadata&, const MoeMetadata&)> on_step_context;
  // Optional: the impls a plugin vendor supplies for some OpTypes (vendor ABI 1.1); layer 3 builds them
  // in place of the default impls (backends/plugin/plugin_impls.h, Note [Impl builders]). Opaque here.
  std::shared_ptr<const PluginImplSet> plugin_impls;
};

class Registry {
 public:
  // Typed registration; a duplicate (op, vendor, dtype) throws, naming both registration sites.
  template <OpType Op>
  void add(const std::string& vendor, DType dtype, typename OpTraits<Op>::Fn fn, const std::string& kernel_name,
           KernelFlags flags = {}, std::source_location where = std::source_location::current()) {
    add_erased(KernelEntry{Op, vendor, dtype, kernel_name, reinterpret_cast<void (*)()>(fn), flags, where});
  }
  // String-keyed registration for plugin vendors; the key must be in the op table.
  void add_by_key(std::string_view key, const std::string& vendor, DType dtype, void (*fn)(),
                  const std::string& kernel_name, KernelFlags flags = {},
                  std::source_location where = std::source_location::current());

  const KernelEntry* find(OpType op, const std::string& vendor, DType dtype) const;
  // Throws UnsupportedOpError with what exists for this op.
  const KernelEntry& resolve(OpType op, const std::string& vendor, DType dtype) const;
  // resolve() without the throw: the entry that would run, or nullptr (Note [Vendor fallback]).
  const KernelEntry* find_with_fallback(OpType op, const std::string& vendor, DType dtype) const;
  std::vector<const KernelEntry*> entries_for(OpType op) const;
  std::vector<std::string> vendors() const;
  // A vendor with a kernel or with VendorInfo.
  bool has_vendor(const std::string& vendor) const;

  // Declares a vendor's fallback, origin and hook. Throws if the fallback chain would loop.
  void set_vendor_info(const std::string& vendor, VendorInfo info);
  const VendorInfo* vendor_info(const std::string& vendor) const;

 private:
  void add_erased(KernelEntry e);
  std::map<std::tuple<OpType, std::string, DType>, KernelEntry> entries_;
  std::map<std::string, VendorInfo> vendor_info_;
};

// A resolved kernel: a function pointer and its entry. Calling it is the only thing a step does.
template <OpType Op>
struct Kernel {
  using Args = typename OpTraits<Op>::Args;
  typename OpTraits<Op>::Fn fn = nullptr;
  const KernelEntry* entry = nullptr;
  bool valid() const { return fn != nullptr; }
};

template <OpType Op>
Kernel<Op> resolve_kernel(const Registry& reg, const std::string& vendor, DType dtype) {
  const KernelEntry& e = reg.resolve(Op, vendor, dtype);
  return Kernel<Op>{reinterpret_cast<typename OpTraits<Op>::Fn>(e.fn), &e};
}

// A kernel launch bound to its own copy of its arguments: what a graph replays. A host step
// (launch_host_step) has no entry: `host` is the whole call.
struct BoundLaunch {
  const KernelEntry* entry = nullptr;
  OpType op{};
  void (*fn)() = nullptr;                             // the kernel launched, type-erased OpTraits<op>::Fn
  std::shared_ptr<const void> args;                   // the copy, an OpTraits<op>::Args
  std::shared_ptr<const std::function<void()>> host;  // a host step, else null
  std::string host_name;                              // "collective:tp.all_reduce"
  bool is_host_step() const { return host != nullptr; }
  // The kernel's name, or the host step's.
  const std::string& name() const;
  void run() const;  // fn(args), typed through the op table, or host()
};

// Records launches: the graph runner captures a step with it (see Note [Graph capture] in
// backends/graph_runner.h). Only top-level launches are recorded; a fused kernel's sub-kernels run
// inside its own call.
class LaunchRecorder {
 public:
  virtual ~LaunchRecorder() = default;
  // Called before the launch runs (it still runs now). Throwing aborts the launch and the step.
  virtual void record(BoundLaunch launch) = 0;
  static LaunchRecorder* active();
  static void set_active(LaunchRecorder* r);
};

// Watches top-level launches as they run, eager or replayed from a captured graph, e.g. to time
// kernels or to snapshot a launch's tensors (visit_tensors in backends/visit_tensors.h, generic over
// the op's field list). `args`
// points at an OpTraits<entry.op>::Args valid for the duration of the call only.
class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  virtual void before_launch(const KernelEntry& entry, const void* args) = 0;
  virtual void after_launch(const KernelEntry& entry, const void* args) = 0;
  static LaunchObserver* active();
  static void set_active(LaunchObserver* o);
};

namespace detail {
int& launch_depth();
// Marks the calling thread as inside a kernel for its lifetime, so that the launches the kernel
// makes itself (a fused op's steps) are nested, not top-level; unwinds with the kernel on a throw.
struct InsideKernel {
  InsideKernel() { ++launch_depth(); }
  ~InsideKernel() { --launch_depth(); }
  InsideKernel(const InsideKernel&) = delete;
  InsideKernel& operator=(const InsideKernel&) = delete;
};
}  // namespace detail

// Layer 4's call: run the kernel on its arguments. `site` and `describe` feed tracing and are only
// used when a Tracer is active; `describe(metadata, tensors)` fills the two strings.
template <OpType Op, class Describe>
void launch(const Kernel<Op>& k, const typename OpTraits<Op>::Args& args, const TraceSite* site, Describe&& describe) {
  using Args = typename OpTraits<Op>::Args;
  LaunchObserver* observer = nullptr;
  if (detail::launch_depth() == 0) {
    if (LaunchRecorder* rec = LaunchRecorder::active())
      rec->record(BoundLaunch{k.entry, Op, reinterpret_cast<void (*)()>(k.fn), std::make_shared<const Args>(args)});
    observer = LaunchObserver::active();
    if (observer) observer->before_launch(*k.entry, &args);
  }
  Tracer* tracer = Tracer::active();
  if (!tracer) {
    {
      detail::InsideKernel inside;
      k.fn(args);
    }
    if (observer) observer->after_launch(*k.entry, &args);
    return;
  }
  TraceEvent ev;
  if (site) {
    ev.module_path = site->module_path;
    ev.nn_module = site->nn_module;
    ev.impl = site->impl;
  }
  ev.op_type = std::string(op_info(Op).name);
  ev.key = std::string(op_key(Op));
  ev.vendor = k.entry->vendor;
  ev.kernel = k.entry->kernel_name;
  describe(ev.metadata, ev.tensors);
  const size_t idx = tracer->begin(std::move(ev));
  {
    detail::InsideKernel inside;
    k.fn(args);
  }
  tracer->end(idx);
  if (observer) observer->after_launch(*k.entry, &args);
}

// Note [Host steps]
// Work between kernels that is not a kernel: the collectives of tensor- and expert-parallel impls
// (Note [Communicator] in backends/communicator.h). It runs now as a top-level launch (kernels it
// launches nest under it), and while a graph records it is recorded like a kernel launch, so a replay
// runs it in order between the kernels around it. `step` must read everything that varies per step
// from memory it points at (tensors, the StepContext), never from values copied at capture. Traced
// as op_type "host_step" with `name` and `describe()`'s metadata (bytes moved, the MoE path).
void launch_host_step(const std::string& name, const TraceSite* site, std::function<void()> step,
                      const std::function<std::string()>& describe = {});

// The usual call: the trace strings come from the op's field list (Note [Op fields]).
template <OpType Op>
void launch(const Kernel<Op>& k, const typename OpTraits<Op>::Args& args, const TraceSite* site = nullptr) {
  launch(k, args, site, [&](std::string& m, std::string& t) { describe_fields(args, m, t); });
}

// "name=dtype[shape] ..." for trace output.
std::string describe_tensors(std::initializer_list<std::pair<const char*, const Tensor*>> ts);

}  // namespace opchain
