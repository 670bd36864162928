#include "vendors/plugin_loader.h"

#include <dlfcn.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "opchain/vendor_abi.h"
#include "ops/abi_marshal.h"
#include "ops/op_fields.h"
#include "ops/op_table.h"

// Note [Plugin kernels]
// The registry holds plain `void(const Args&)` pointers (a graph replays them, Kernel<Op> calls them),
// and a C function pointer carries no state. So each plugin kernel takes a slot: thunk<Op, S> is a
// C++ kernel of op Op that marshals its Args through the op's field list (Note [Op fields]) into
// oc_arg values in field order and calls the plugin kernel in slot S of Op. Slots are taken when a
// plugin has passed every check, never given back (a plugin is never unloaded: the registry and any
// captured graph keep its pointers), and shared when the same kernel is loaded into another registry.
// kSlotsPerOp bounds the plugin kernels of one op in a process. The marshalling itself is
// ops/abi_marshal.h (CallMarshal), shared with the plugin impls of layer 3.

namespace opchain {

namespace {

static_assert(static_cast<int>(DType::F32) == OC_DTYPE_F32 && static_cast<int>(DType::F16) == OC_DTYPE_F16 &&
                  static_cast<int>(DType::BF16) == OC_DTYPE_BF16 && static_cast<int>(DType::I32) == OC_DTYPE_I32 &&
                  static_cast<int>(DType::I64) == OC_DTYPE_I64 && static_cast<int>(DType::U8) == OC_DTYPE_U8 &&
                  static_cast<int>(DType::I8) == OC_DTYPE_I8 && static_cast<int>(DType::F8E4M3) == OC_DTYPE_F8E4M3,
              "oc_dtype numbers are DType's");
static_assert(kMaxDims == OC_MAX_DIMS, "oc_tensor holds every dim of a Tensor");
static_assert(static_cast<int>(Role::In) == OC_ROLE_IN && static_cast<int>(Role::InOut) == OC_ROLE_INOUT &&
                  static_cast<int>(Role::Out) == OC_ROLE_OUT && static_cast<int>(Role::Attr) == OC_ROLE_ATTR &&
                  static_cast<int>(Role::Meta) == OC_ROLE_META,
              "oc_role numbers are Role's");

constexpr size_t kSlotsPerOp = 16;
constexpr size_t kErrSize = 512;

struct PluginKernel {
  oc_kernel_fn fn = nullptr;
  std::shared_ptr<const PluginRuntime> runtime;
  std::string kernel_name;
  OpType op{};
  DType dtype{};
};

std::mutex g_mu;
std::deque<PluginKernel> g_kernels;  // stable addresses
std::array<std::array<const PluginKernel*, kSlotsPerOp>, kNumOps> g_slots{};

// ---- marshalling (generic over the field list, ops/abi_marshal.h) ---------------------

template <class M>
const char* enum_values() {
  if constexpr (std::is_same_v<M, MatmulPrecision>)
    return "f32|bf16|quantized|int8";
  else if constexpr (std::is_same_v<M, DeltaRuleForm>)
    return "recurrent|chunked";
  else {
    static_assert(!std::is_enum_v<M>, "an enum field needs its value names for the ABI (enum_values)");
    return "";
  }
}

std::string plugin_prefix(const std::string& path) { return "vendor plugin " + path; }

template <OpType Op>
void call_plugin(const PluginKernel& k, const typename OpTraits<Op>::Args& args) {
  const PluginRuntime& rt = *k.runtime;
  CallMarshal m(rt);
  m.add_fields(args);
  char err[kErrSize] = {0};
  const int32_t status = k.fn(m.args(), m.size(), rt.user_data, err, sizeof err);
  if (status == OC_STATUS_OK) return m.copy_back();
  err[kErrSize - 1] = '\0';
  throw VendorPluginError(plugin_label(rt) + ": kernel " + k.kernel_name + " for " + std::string(op_key(Op)) + "(" +
                          std::string(dtype_name(k.dtype)) + ") failed with status " + std::to_string(status) +
                          (err[0] ? ": " + std::string(err) : std::string(" (no message)")));
}

template <OpType Op, size_t S>
void thunk(const typename OpTraits<Op>::Args& args) {
  call_plugin<Op>(*g_slots[static_cast<size_t>(Op)][S], args);
}

template <OpType Op, size_t... S>
std::array<void (*)(), kSlotsPerOp> thunks_of(std::index_sequence<S...>) {
  return {reinterpret_cast<void (*)()>(&thunk<Op, S>)...};
}

void (*thunk_for(OpType op, size_t slot))() {
  switch (op) {
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol)                                     \
  case OpType::name: {                                                                          \
    static const auto table = thunks_of<OpType::name>(std::make_index_sequence<kSlotsPerOp>{}); \
    return table[slot];                                                                         \
  }
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
  }
  return nullptr;
}

// ---- the field table -------------------------------------------------------------------------

template <class Args>
std::vector<AbiField> fields_of(std::string_view schema) {
  const std::vector<SchemaField> parsed = parse_schema_fields(schema);
  std::vector<AbiField> out;
  for_each_field<Args>([&](const auto& f) {
    using M = typename std::decay_t<decltype(f)>::Type;
    if (!f.marshalled) return;
    bool optional = false;
    for (const SchemaField& s : parsed)
      if (s.name == f.name) optional = s.optional;
    out.push_back(AbiField{f.name, f.role, abi_arg_kind<M>(), optional, enum_values<M>()});
  });
  return out;
}

const std::array<std::vector<AbiField>, kNumOps>& field_table() {
  static const std::array<std::vector<AbiField>, kNumOps> table = [] {
    std::array<std::vector<AbiField>, kNumOps> t;
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol) \
  t[static_cast<size_t>(OpType::name)] = fields_of<args_t>(schema);
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
    return t;
  }();
  return table;
}

// ---- the host API ----------------------------------------------------------------------------

extern "C" {
static size_t host_num_ops(void) { return kNumOps; }
static const char* host_op_key(size_t op) { return op < kNumOps ? kOpTable[op].key.data() : nullptr; }
static const char* host_op_schema(size_t op) { return op < kNumOps ? kOpTable[op].schema.data() : nullptr; }
static int32_t host_find_op(const char* key, size_t* op) {
  if (!key) return OC_STATUS_INVALID_ARGUMENT;
  const auto t = op_type_from_key(key);
  if (!t) return OC_STATUS_INVALID_ARGUMENT;
  if (op) *op = static_cast<size_t>(*t);
  return OC_STATUS_OK;
}
static size_t host_op_num_fields(size_t op) { return op < kNumOps ? field_table()[op].size() : 0; }
static int32_t host_op_field(size_t op, size_t field, oc_field_info* out) {
  if (op >= kNumOps || field >= field_table()[op].size() || !out) return OC_STATUS_INVALID_ARGUMENT;
  const AbiField& f = field_table()[op][field];
  *out = oc_field_info{f.name.c_str(), static_cast<int32_t>(f.role), f.kind, f.optional ? 1 : 0, 0, f.enum_values};
  return OC_STATUS_OK;
}
}

// The key strings are views of string literals in kOpTable, so .data() is NUL-terminated.
const oc_host_api kHostApi = {OPCHAIN_VENDOR_ABI_MAJOR,
                              OPCHAIN_VENDOR_ABI_MINOR,
                              sizeof(oc_host_api),
                              host_num_ops,
                              host_op_key,
                              host_op_schema,
                              host_find_op,
                              host_op_num_fields,
                              host_op_field};

// ---- loading ---------------------------------------------------------------------------------

bool valid_vendor_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char ch : s)
    if (!(std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' ||
          ch == '-'))
      return false;
  return true;
}

std::string join_vendors(const Registry& reg) {
  std::string s;
  for (const auto& v : reg.vendors()) s += (s.empty() ? "" : ", ") + v;
  return s.empty() ? "none" : s;
}

std::string version_str(uint32_t major, uint32_t minor) { return std::to_string(major) + "." + std::to_string(minor); }

std::string canonical_path(const std::string& path) {
  std::error_code ec;
  std::string c = std::filesystem::weakly_canonical(path, ec).string();
  return c.empty() ? path : c;
}

// The plugin at `path` if it is already loaded into `reg` (its vendor's origin is the same file).
std::optional<LoadedPlugin> already_loaded(const Registry& reg, const std::string& path) {
  const std::string canonical = canonical_path(path);
  for (const auto& v : reg.vendors()) {
    const VendorInfo* info = reg.vendor_info(v);
    if (!info || info->origin.empty() || canonical_path(info->origin) != canonical) continue;
    size_t n = 0;
    for (const auto& op : kOpTable)
      for (const KernelEntry* e : reg.entries_for(op.type)) n += e->vendor == v;
    size_t impls = 0;
    if (info->plugin_impls)
      for (const auto& i : info->plugin_impls->impls) impls += i.has_value();
    return LoadedPlugin{
        info->origin, v, info->fallback, n, impls, info->plugin_impls && info->plugin_impls->runtime->has_memory()};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<AbiField>& abi_fields(OpType op) { return field_table()[static_cast<size_t>(op)]; }

const char* abi_kind_name(int kind) {
  switch (kind) {
    case OC_ARG_TENSOR:
      return "tensor";
    case OC_ARG_F32:
      return "f32";
    case OC_ARG_I64:
      return "i64";
    case OC_ARG_BOOL:
      return "bool";
    case OC_ARG_ENUM:
      return "enum";
    case OC_ARG_OPAQUE:
      return "opaque";
    case OC_ARG_ATTN_META:
      return "attn_meta";
    case OC_ARG_MOE_META:
      return "moe_meta";
    case OC_ARG_EXPERT_WEIGHTS:
      return "expert_weights";
    case OC_ARG_TENSOR_LIST:
      return "tensor_list";
    case OC_ARG_QUANT:
      return "quant";
    case OC_ARG_QUANT_LIST:
      return "quant_list";
  }
  return "?";
}

const AbiField* abi_unmarshallable_field(OpType op) {
  for (const AbiField& f : abi_fields(op))
    if (f.kind == OC_ARG_OPAQUE && !f.optional) return &f;
  return nullptr;
}

LoadedPlugin load_vendor_plugin(Registry& reg, const std::string& path) {
  std::lock_guard lock(g_mu);
  if (auto loaded = already_loaded(reg, path)) return *loaded;

  const std::string where = plugin_prefix(path);
  auto fail = [&](const std::string& what) -> VendorPluginError { return VendorPluginError(where + ": " + what); };
  // A name without '/' would make dlopen search the library path; a plugin is always a file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    throw VendorPluginError("cannot load " + where + ": " + (e ? e : "dlopen failed"));
  }
  // Closes the library unless the plugin registered kernels (then it stays for the process).
  struct Handle {
    void* h;
    bool keep = false;
    ~Handle() {
      if (!keep) dlclose(h);
    }
  } guard{handle};
  dlerror();
  void* sym = dlsym(handle, OPCHAIN_VENDOR_ENTRY_SYMBOL);
  if (!sym) {
    const char* e = dlerror();
    throw fail(std::string("no entry symbol '") + OPCHAIN_VENDOR_ENTRY_SYMBOL + "' (" + (e ? e : "not found") +
               "); a vendor plugin exports it (include/opchain/vendor_abi.h)");
  }
  char err[kErrSize] = {0};
  const auto init = reinterpret_cast<oc_vendor_plugin_init_fn>(sym);
  const oc_vendor_plugin* p = init(&kHostApi, err, sizeof err);
  err[kErrSize - 1] = '\0';
  if (!p)
    throw fail(std::string(OPCHAIN_VENDOR_ENTRY_SYMBOL) + " failed: " + (err[0] ? err : "returned NULL, no message"));
  if (p->abi_major != OPCHAIN_VENDOR_ABI_MAJOR)
    throw fail("built against vendor ABI " + version_str(p->abi_major, p->abi_minor) + ", this opchain speaks " +
               version_str(OPCHAIN_VENDOR_ABI_MAJOR, OPCHAIN_VENDOR_ABI_MINOR) +
               " (major versions must match; rebuild the plugin against this opchain's vendor_abi.h)");
  if (p->abi_minor > OPCHAIN_VENDOR_ABI_MINOR)
    throw fail("built against vendor ABI " + version_str(p->abi_major, p->abi_minor) + ", newer than this opchain's " +
               version_str(OPCHAIN_VENDOR_ABI_MAJOR, OPCHAIN_VENDOR_ABI_MINOR) +
               "; upgrade opchain or rebuild the plugin");
  const std::string vendor = p->vendor_name ? p->vendor_name : "";
  if (!valid_vendor_name(vendor))
    throw fail("vendor name '" + vendor + "' is not a vendor name (1-64 of a-z, 0-9, '_', '-')");
  if (reg.has_vendor(vendor))
    throw fail("vendor '" + vendor + "' is already registered (registered: " + join_vendors(reg) + ")");
  const std::string fallback = p->fallback_vendor ? p->fallback_vendor : "";
  if (!fallback.empty() && !reg.has_vendor(fallback))
    throw fail("vendor '" + vendor + "' falls back to '" + fallback +
               "', which is not registered (registered: " + join_vendors(reg) + ")");
  if (p->num_kernels > 0 && !p->kernels) throw fail("vendor '" + vendor + "' declares kernels but the list is NULL");
  // The 1.1 members exist only in a 1.1 plugin's struct.
  const bool v11 = p->abi_minor >= 1;
  const oc_impl_def* impl_defs = v11 ? p->impls : nullptr;
  const size_t num_impls = v11 && p->impls ? p->num_impls : 0;
  if (v11 && p->num_impls > 0 && !p->impls) throw fail("vendor '" + vendor + "' declares impls but the list is NULL");
  auto runtime = std::make_shared<PluginRuntime>();
  runtime->path = path;
  runtime->vendor = vendor;
  runtime->abi_minor = p->abi_minor;
  runtime->user_data = p->user_data;
  if (v11 && p->memory) {
    const oc_memory_hooks& mh = *p->memory;
    const char* missing = !mh.alloc            ? "alloc"
                          : !mh.free           ? "free"
                          : !mh.copy_to_device ? "copy_to_device"
                          : !mh.copy_to_host   ? "copy_to_host"
                                               : nullptr;
    if (missing)
      throw fail("vendor '" + vendor + "' declares memory hooks without '" + missing +
                 "' (alloc, free, copy_to_device and copy_to_host are all required once memory is declared)");
    runtime->memory = mh;
  }

  // Check every kernel before registering any.
  struct Pending {
    OpType op;
    DType dtype;
    std::string name;
    const oc_kernel_def* def;
  };
  std::vector<Pending> pending;
  std::map<std::pair<OpType, DType>, size_t> first;
  for (size_t i = 0; i < p->num_kernels; ++i) {
    const oc_kernel_def& d = p->kernels[i];
    const std::string key = d.op_key ? d.op_key : "";
    const std::string which = "kernel " + std::to_string(i) + " (" + (key.empty() ? "no key" : key) + ")";
    const auto op = op_type_from_key(key);
    if (!op) {
      std::string known;
      for (const auto& info : kOpTable) known += (known.empty() ? "" : ", ") + std::string(info.key);
      throw fail(which + ": unknown op key '" + key + "'; known keys: " + known);
    }
    if (d.dtype < 0 || d.dtype >= kNumDTypes) throw fail(which + ": unknown dtype " + std::to_string(d.dtype));
    const DType dtype = static_cast<DType>(d.dtype);
    if (!d.fn) throw fail(which + ": null kernel function for " + key + "(" + std::string(dtype_name(dtype)) + ")");
    if (const AbiField* f = abi_unmarshallable_field(*op))
      throw fail(which + ": op '" + key + "' has field '" + f->name + "', which vendor ABI " +
                 version_str(OPCHAIN_VENDOR_ABI_MAJOR, OPCHAIN_VENDOR_ABI_MINOR) + " does not marshal");
    // A 1.0 plugin sees the 1.1 kinds as opaque: it may not take an op with a required one.
    if (!v11)
      for (const AbiField& f : abi_fields(*op))
        if (f.kind > OC_ARG_OPAQUE && !f.optional)
          throw fail(which + ": op '" + key + "' has field '" + f.name + "' (" + abi_kind_name(f.kind) +
                     "), which vendor ABI 1.0 does not marshal; build the plugin against vendor ABI 1.1 or later");
    if (auto [it, fresh] = first.emplace(std::make_pair(*op, dtype), i); !fresh)
      throw fail("duplicate kernel " + key + "(" + std::string(dtype_name(dtype)) + "): kernels " +
                 std::to_string(it->second) + " and " + std::to_string(i));
    std::string name = d.name && d.name[0] ? d.name : vendor + "::" + key + "_" + std::string(dtype_name(dtype));
    pending.push_back({*op, dtype, std::move(name), &d});
  }

  auto impl_set = std::make_shared<PluginImplSet>();
  impl_set->runtime = runtime;
  for (size_t i = 0; i < num_impls; ++i) {
    const oc_impl_def& d = impl_defs[i];
    const std::string key = d.op_key ? d.op_key : "";
    const std::string which = "impl " + std::to_string(i) + " (" + (key.empty() ? "no key" : key) + ")";
    const auto op = op_type_from_key(key);
    if (!op) throw fail(which + ": unknown op key '" + key + "'");
    if (!d.run) throw fail(which + ": null run function");
    auto& slot = impl_set->impls[static_cast<size_t>(*op)];
    if (slot) throw fail("duplicate impl for op '" + key + "'");
    slot = PluginImpl{&d, d.name && d.name[0] ? d.name : vendor + "::" + key + "_impl"};
  }

  // Take the slots: the same kernel loaded before (into another registry) keeps its slot.
  std::array<size_t, kNumOps> used{};
  for (size_t o = 0; o < kNumOps; ++o)
    while (used[o] < kSlotsPerOp && g_slots[o][used[o]]) ++used[o];
  std::vector<size_t> slots;
  std::vector<bool> fresh;
  for (const Pending& k : pending) {
    const size_t o = static_cast<size_t>(k.op);
    size_t slot = kSlotsPerOp;
    for (size_t s = 0; s < used[o] && slot == kSlotsPerOp; ++s) {
      const PluginKernel* pk = g_slots[o][s];  // null: a slot this load has just taken
      if (pk && pk->fn == k.def->fn && pk->runtime->user_data == p->user_data && pk->dtype == k.dtype &&
          pk->runtime->vendor == vendor)
        slot = s;
    }
    fresh.push_back(slot == kSlotsPerOp);
    if (slot == kSlotsPerOp) {
      if (used[o] == kSlotsPerOp)
        throw fail("too many plugin kernels for op '" + std::string(op_key(k.op)) + "' in this process (at most " +
                   std::to_string(kSlotsPerOp) + ")");
      slot = used[o]++;
    }
    slots.push_back(slot);
  }
  // No check can fail past this point, so a rejected plugin leaves nothing behind.
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!fresh[i]) continue;
    const Pending& k = pending[i];
    g_kernels.push_back(PluginKernel{k.def->fn, runtime, k.name, k.op, k.dtype});
    g_slots[static_cast<size_t>(k.op)][slots[i]] = &g_kernels.back();
  }
  VendorInfo info;
  info.fallback = fallback;
  info.origin = path;
  if (num_impls > 0) info.plugin_impls = impl_set;
  if (p->update_step_context) {
    auto hook = p->update_step_context;
    std::shared_ptr<const PluginRuntime> rt = runtime;
    info.on_step_context = [hook, rt](const AttnMetadata& m, const MoeMetadata& moe) {
      // The hook is where a vendor copies the metadata to its own memory: it is handed host memory.
      CallMarshal marshal(*rt, /*stage=*/false);
      const oc_step_info* s = marshal.step_info(&m, &moe);
      char e[kErrSize] = {0};
      const int32_t status = hook(s, rt->user_data, e, sizeof e);
      e[kErrSize - 1] = '\0';
      if (status != OC_STATUS_OK)
        throw VendorPluginError(plugin_label(*rt) + ": update_step_context failed with status " +
                                std::to_string(status) + (e[0] ? ": " + std::string(e) : std::string(" (no message)")));
    };
  }
  reg.set_vendor_info(vendor, std::move(info));
  for (size_t i = 0; i < pending.size(); ++i) {
    KernelFlags flags;
    flags.capture_safe = (pending[i].def->flags & OC_KERNEL_CAPTURE_SAFE) != 0;
    reg.add_by_key(op_key(pending[i].op), vendor, pending[i].dtype, thunk_for(pending[i].op, slots[i]), pending[i].name,
                   flags);
  }
  guard.keep = true;
  return LoadedPlugin{path, vendor, fallback, pending.size(), num_impls, runtime->has_memory()};
}

std::vector<LoadedPlugin> load_vendor_plugins(Registry& reg, const std::vector<std::string>& paths) {
  std::vector<std::string> all;
  if (const char* env = std::getenv("OPCHAIN_VENDOR_PLUGINS")) {
    std::string_view s = env;
    while (!s.empty()) {
      const size_t colon = s.find(':');
      const std::string_view part = s.substr(0, colon);
      if (!part.empty()) all.emplace_back(part);
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
  }
  all.insert(all.end(), paths.begin(), paths.end());
  std::vector<LoadedPlugin> out;
  for (const auto& p : all) out.push_back(load_vendor_plugin(reg, p));
  return out;
}

}  // namespace opchain
