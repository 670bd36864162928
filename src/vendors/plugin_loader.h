#pragma once
// Layer 5: vendors loaded at run time from shared libraries through the C ABI of
// include/opchain/vendor_abi.h (Note [Vendor ABI] there; Note [Plugin kernels] in plugin_loader.cpp).
// A plugin's kernels go into a Registry like a built-in vendor's, under its vendor name, with its
// fallback vendor declared (Note [Vendor fallback] in ops/registry.h).
#include <string>
#include <vector>

#include "ops/field.h"
#include "ops/registry.h"

namespace opchain {

struct LoadedPlugin {
  std::string path;
  std::string vendor;
  std::string fallback;  // empty: none
  size_t num_kernels = 0;
  size_t num_impls = 0;     // ABI 1.1: impls that replace opchain's default impl of an OpType
  bool has_memory = false;  // ABI 1.1: declares memory hooks (Note [Plugin memory] in ops/abi_marshal.h)
};

// dlopens `path` (RTLD_NOW | RTLD_LOCAL), checks its ABI version, vendor name, fallback and every
// kernel, then registers them into `reg`. Any failure is one VendorPluginError naming the path, and
// then nothing of the plugin is registered. Loading a path already loaded into `reg` returns it again.
LoadedPlugin load_vendor_plugin(Registry& reg, const std::string& path);

// The plugins of OPCHAIN_VENDOR_PLUGINS (paths separated by ':'), then `paths`, loaded into `reg`
// in that order.
std::vector<LoadedPlugin> load_vendor_plugins(Registry& reg, const std::vector<std::string>& paths);

// One field of an op as the ABI marshals it (kind: an oc_arg_kind): the per-op field order plugins
// are written against. `opchain ops --json` prints it; host->op_field() answers it at plugin init.
struct AbiField {
  std::string name;
  Role role;
  int kind;
  bool optional;
  const char* enum_values;  // "f32|bf16|quantized" for an enum, else ""
};
const std::vector<AbiField>& abi_fields(OpType op);
const char* abi_kind_name(int kind);  // "tensor", "f32", ..., "opaque", "attn_meta", ..., "quant_list"
// The first required field with no C form in this ABI version, or nullptr: a plugin may provide a
// kernel for the op only if there is none. Since ABI 1.1 every op of the table has a C form for every
// field (tests/vendors/plugin_loader_test.cpp checks it), so this is nullptr for all; a new field type
// without one would make it refuse that op's plugin kernels by name.
const AbiField* abi_unmarshallable_field(OpType op);

}  // namespace opchain
