#include "ops/registry.h"

#include <set>

namespace opchain {

std::optional<OpType> op_type_from_key(std::string_view key) {
  for (const auto& info : kOpTable)
    if (info.key == key) return info.type;
  return std::nullopt;
}

const char* moe_comm_type_name(MoeCommType t) {
  switch (t) {
    case MoeCommType::Local:
      return "local";
    case MoeCommType::AllGather:
      return "allgather";
    case MoeCommType::AllToAll:
      return "alltoall";
  }
  return "?";
}

static std::string site_str(const std::source_location& w) {
  return std::string(w.file_name()) + ":" + std::to_string(w.line());
}

void Registry::add_erased(KernelEntry e) {
  auto key = std::make_tuple(e.op, e.vendor, e.dtype);
  if (auto it = entries_.find(key); it != entries_.end()) {
    throw UnsupportedOpError("duplicate registration of " + std::string(op_key(e.op)) + "(" +
                             std::string(dtype_name(e.dtype)) + ") for vendor '" + e.vendor + "': first at " +
                             site_str(it->second.where) + ", again at " + site_str(e.where));
  }
  if (e.fn == nullptr)
    throw UnsupportedOpError("null kernel registered for " + std::string(op_key(e.op)) + " by vendor '" + e.vendor +
                             "' at " + site_str(e.where));
  entries_.emplace(key, std::move(e));
}

void Registry::add_by_key(std::string_view key, const std::string& vendor, DType dtype, void (*fn)(),
                          const std::string& kernel_name, KernelFlags flags, std::source_location where) {
  auto op = op_type_from_key(key);
  if (!op) {
    std::string known;
    for (const auto& info : kOpTable) known += (known.empty() ? "" : ", ") + std::string(info.key);
    throw UnsupportedOpError("vendor '" + vendor + "' registered unknown op key '" + std::string(key) + "' at " +
                             site_str(where) + "; known keys: " + known);
  }
  add_erased(KernelEntry{*op, vendor, dtype, kernel_name, fn, flags, where});
}

const KernelEntry* Registry::find(OpType op, const std::string& vendor, DType dtype) const {
  auto it = entries_.find(std::make_tuple(op, vendor, dtype));
  return it == entries_.end() ? nullptr : &it->second;
}

const KernelEntry* Registry::find_with_fallback(OpType op, const std::string& vendor, DType dtype) const {
  std::string v = vendor;
  for (size_t hops = 0; hops <= vendor_info_.size(); ++hops) {  // set_vendor_info refuses loops
    if (const KernelEntry* e = find(op, v, dtype)) return e;
    const VendorInfo* info = vendor_info(v);
    if (!info || info->fallback.empty()) return nullptr;
    v = info->fallback;
  }
  return nullptr;
}

void Registry::set_vendor_info(const std::string& vendor, VendorInfo info) {
  std::string chain = vendor;
  for (std::string v = info.fallback; !v.empty();) {
    chain += " -> " + v;
    if (v == vendor) throw UnsupportedOpError("vendor fallback loops: " + chain);
    const VendorInfo* next = this->vendor_info(v);
    v = next ? next->fallback : std::string();
  }
  vendor_info_[vendor] = std::move(info);
}

const VendorInfo* Registry::vendor_info(const std::string& vendor) const {
  auto it = vendor_info_.find(vendor);
  return it == vendor_info_.end() ? nullptr : &it->second;
}

const KernelEntry& Registry::resolve(OpType op, const std::string& vendor, DType dtype) const {
  if (const KernelEntry* e = find_with_fallback(op, vendor, dtype)) return *e;
  std::map<std::string, std::string> have;
  for (const auto& [k, e] : entries_) {
    if (e.op != op) continue;
    auto& s = have[e.vendor];
    s += (s.empty() ? "" : ", ") + std::string(dtype_name(e.dtype));
  }
  std::string msg = "no kernel for " + std::string(op_key(op)) + "(" + std::string(dtype_name(dtype)) +
                    ") on vendor '" + vendor + "' (OpType::" + std::string(op_info(op).name) + ", key '" +
                    std::string(op_key(op)) + "')";
  if (!has_vendor(vendor)) msg += "; vendor '" + vendor + "' is not registered";
  for (const VendorInfo* info = vendor_info(vendor); info && !info->fallback.empty();
       info = vendor_info(info->fallback))
    msg += "; nor on its fallback '" + info->fallback + "'";
  if (have.empty()) {
    msg += "; no vendor registers this op";
  } else {
    msg += "; registered:";
    for (const auto& [v, dts] : have) msg += " " + v + ": " + dts + ";";
    msg.pop_back();
  }
  throw UnsupportedOpError(msg);
}

std::vector<const KernelEntry*> Registry::entries_for(OpType op) const {
  std::vector<const KernelEntry*> out;
  for (const auto& [k, e] : entries_)
    if (e.op == op) out.push_back(&e);
  return out;
}

std::vector<std::string> Registry::vendors() const {
  std::set<std::string> vs;
  for (const auto& [k, e] : entries_) vs.insert(e.vendor);
  for (const auto& [v, info] : vendor_info_) vs.insert(v);
  return {vs.begin(), vs.end()};
}

bool Registry::has_vendor(const std::string& vendor) const {
  if (vendor_info_.count(vendor)) return true;
  for (const auto& [k, e] : entries_)
    if (e.vendor == vendor) return true;
  return false;
}

namespace {
LaunchRecorder* g_recorder = nullptr;
LaunchObserver* g_observer = nullptr;
}  // namespace
LaunchRecorder* LaunchRecorder::active() { return g_recorder; }
void LaunchRecorder::set_active(LaunchRecorder* r) { g_recorder = r; }
LaunchObserver* LaunchObserver::active() { return g_observer; }
void LaunchObserver::set_active(LaunchObserver* o) { g_observer = o; }

const std::string& BoundLaunch::name() const { return host ? host_name : entry->kernel_name; }

void BoundLaunch::run() const {
  if (host) {
    (*host)();
    return;
  }
  switch (op) {
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol)                                             \
  case OpType::name:                                                                                    \
    reinterpret_cast<typename OpTraits<OpType::name>::Fn>(fn)(*static_cast<const args_t*>(args.get())); \
    return;
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
  }
}

void launch_host_step(const std::string& name, const TraceSite* site, std::function<void()> step,
                      const std::function<std::string()>& describe) {
  auto shared = std::make_shared<const std::function<void()>>(std::move(step));
  if (detail::launch_depth() == 0)
    if (LaunchRecorder* rec = LaunchRecorder::active()) {
      BoundLaunch l;
      l.host = shared;
      l.host_name = name;
      rec->record(std::move(l));
    }
  Tracer* tracer = Tracer::active();
  if (!tracer) {
    detail::InsideKernel inside;
    (*shared)();
    return;
  }
  TraceEvent ev;
  if (site) {
    ev.module_path = site->module_path;
    ev.nn_module = site->nn_module;
    ev.impl = site->impl;
  }
  ev.op_type = "host_step";
  ev.key = name;
  ev.vendor = "host";
  ev.kernel = name;
  const size_t idx = tracer->begin(std::move(ev));
  {
    detail::InsideKernel inside;
    (*shared)();
  }
  tracer->end(idx);
  // After the step: the bytes it moved are known only once it ran.
  if (describe) tracer->set_metadata(idx, describe());
}

int& detail::launch_depth() {
  static thread_local int depth = 0;
  return depth;
}

std::string describe_tensors(std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  std::string s;
  for (const auto& [name, t] : ts) {
    if (!t || t->is_null()) continue;
    if (!s.empty()) s += ' ';
    s += name;
    s += '=';
    s += t->desc();
  }
  return s;
}

}  // namespace opchain
