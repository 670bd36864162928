#pragma once
// Layer 4: the one kernel registry. Vendors register (op, dtype) -> function pointer with an explicit
// register_<vendor>_kernels(Registry&); modules resolve each kernel once at model build.
// Note [Resolve at build]: a missing key/dtype is an UnsupportedOpError at build that names the op,
// key, dtype, vendor and what does exist; the step loop never looks anything up.
#include <functional>
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/trace.h"
#include "ops/op_table.h"

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

class Registry {
 public:
  // Typed registration; a duplicate (op, vendor, dtype) throws, naming both registration sites.
  template <OpType Op>
  void add(const std::string& vendor, DType dtype, typename OpTraits<Op>::Fn fn, const std::string& kernel_name,
           KernelFlags flags = {}, std::source_location where = std::source_location::current()) {
    add_erased(KernelEntry{Op, vendor, dtype, kernel_name, reinterpret_cast<void (*)()>(fn), flags, where});
  }
  // String-keyed registration for plugin vendors; the key must be in the op table.
  void add_by_key(std::string_view key, const std::string& vendor, DType dtype, void (*fn)(), const std::string& kernel_name,
                  KernelFlags flags = {}, std::source_location where = std::source_location::current());

  const KernelEntry* find(OpType op, const std::string& vendor, DType dtype) const;
  // Throws UnsupportedOpError with what exists for this op.
  const KernelEntry& resolve(OpType op, const std::string& vendor, DType dtype) const;
  std::vector<const KernelEntry*> entries_for(OpType op) const;
  std::vector<std::string> vendors() const;
  bool has_vendor(const std::string& vendor) const;

 private:
  void add_erased(KernelEntry e);
  std::map<std::tuple<OpType, std::string, DType>, KernelEntry> entries_;
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

// Observes launches: the graph runner records them while capturing (see Note [Graph capture]).
class LaunchRecorder {
 public:
  virtual ~LaunchRecorder() = default;
  // fn/args are the kernel and a copy of its bound arguments; returns false to also run it now.
  virtual void record(const KernelEntry& entry, std::function<void()> bound_call) = 0;
  static LaunchRecorder* active();
  static void set_active(LaunchRecorder* r);
};

namespace detail {
int& launch_depth();
}

// Layer 4's call: run the kernel on its arguments. `site` and `describe` feed tracing and are only
// used when a Tracer is active; `describe(metadata, tensors)` fills the two strings.
template <OpType Op, class Describe>
void launch(const Kernel<Op>& k, const typename OpTraits<Op>::Args& args, const TraceSite* site, Describe&& describe) {
  if (LaunchRecorder* rec = LaunchRecorder::active(); rec && detail::launch_depth() == 0) {
    rec->record(*k.entry, [fn = k.fn, a = args] { fn(a); });
  }
  Tracer* tracer = Tracer::active();
  if (!tracer) {
    ++detail::launch_depth();
    k.fn(args);
    --detail::launch_depth();
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
  ++detail::launch_depth();
  k.fn(args);
  --detail::launch_depth();
  tracer->end(idx);
}

// "name=dtype[shape] ..." for trace output.
std::string describe_tensors(std::initializer_list<std::pair<const char*, const Tensor*>> ts);

}  // namespace opchain
