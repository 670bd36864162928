#pragma once
// Layer 4: each op's fields as the C structs of the vendor ABI (include/opchain/vendor_abi.h, Note
// [Vendor ABI]), generic over the op's field list (Note [Op fields]): the "versioned C ABI that
// marshals them generically" of the architecture note. The kernel thunks of vendors/plugin_loader.cpp
// (layer 5) and the plugin impls of backends/plugin/plugin_impls.h (layer 3) both marshal through
// CallMarshal, so a field has one C form whoever calls the plugin. It holds no kernel and no plugin.
//
// Note [Plugin memory]
// A plugin that declares oc_memory_hooks is handed no host pointer: CallMarshal allocates a buffer
// through the hooks for every tensor of the call (fields, the matrices of expert and weight lists, the
// metadata's index tensors and quantisation scales), copies the host tensor in, and after the plugin
// returned OK copies the tensors the op writes back. The buffers are freed when the call ends. This is
// ONNX Runtime's copy-at-the-boundary for a provider without shared memory: correct for every op and
// every caller, and slow (weights cross each call). Keeping weights and step buffers resident on the
// vendor's memory needs the engine to allocate them there, which ABI 1.1 does not do yet.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"
#include "opchain/vendor_abi.h"
#include "ops/expert_weights.h"
#include "ops/field.h"
#include "ops/op_fields.h"
#include "ops/op_table.h"
#include "ops/step_metadata.h"

namespace opchain {

// What the host keeps of a loaded plugin for the calls it makes into it.
struct PluginRuntime {
  std::string path, vendor;
  uint32_t abi_minor = 0;
  void* user_data = nullptr;
  oc_memory_hooks memory{};  // all null: the plugin reads and writes host memory
  bool has_memory() const { return memory.alloc != nullptr; }
};

// "vendor plugin <path> (vendor '<vendor>')": how messages name the plugin.
std::string plugin_label(const PluginRuntime& p);

// The impls a plugin supplies (oc_impl_def), by OpType; what VendorInfo::plugin_impls holds.
struct PluginImpl {
  const oc_impl_def* def = nullptr;
  std::string name;
};
struct PluginImplSet {
  std::shared_ptr<const PluginRuntime> runtime;
  std::array<std::optional<PluginImpl>, kNumOps> impls;
};

// The ABI kind of a field's member type.
template <class M>
constexpr int abi_arg_kind() {
  if constexpr (std::is_same_v<M, Tensor>)
    return OC_ARG_TENSOR;
  else if constexpr (std::is_same_v<M, float>)
    return OC_ARG_F32;
  else if constexpr (std::is_same_v<M, int64_t>)
    return OC_ARG_I64;
  else if constexpr (std::is_same_v<M, bool>)
    return OC_ARG_BOOL;
  else if constexpr (std::is_enum_v<M>)
    return OC_ARG_ENUM;
  else if constexpr (std::is_same_v<M, const AttnMetadata*>)
    return OC_ARG_ATTN_META;
  else if constexpr (std::is_same_v<M, const MoeMetadata*>)
    return OC_ARG_MOE_META;
  else if constexpr (std::is_same_v<M, const ExpertWeights*>)
    return OC_ARG_EXPERT_WEIGHTS;
  else if constexpr (std::is_same_v<M, const std::vector<Tensor>*>)
    return OC_ARG_TENSOR_LIST;
  else if constexpr (std::is_same_v<M, const QuantParams*>)
    return OC_ARG_QUANT;
  else if constexpr (std::is_same_v<M, const std::vector<std::shared_ptr<const QuantParams>>*>)
    return OC_ARG_QUANT_LIST;
  else
    return OC_ARG_OPAQUE;  // a field type with no C form yet: load refuses kernels of its op
}

// One call's C arguments and the storage they point into. The storage is the calling thread's and
// reused from call to call (a nested call takes a second one), so once warm a call allocates nothing
// on the host. Throws VendorPluginError (naming the plugin) when a memory hook fails.
class CallMarshal {
 public:
  // stage = false: host memory even for a plugin with memory hooks (its update_step_context hook).
  explicit CallMarshal(const PluginRuntime& p, bool stage = true);
  ~CallMarshal();
  CallMarshal(const CallMarshal&) = delete;
  CallMarshal& operator=(const CallMarshal&) = delete;

  template <class Args>
  void add_fields(const Args& a) {
    for_each_field<Args>([&](const auto& f) {
      if (f.marshalled) add(f.name, f.role, f.get(a));
    });
  }
  template <class M>
  void add(const char* name, Role role, const M& v) {
    oc_arg& a = next_arg(name, role, abi_arg_kind<M>());
    if constexpr (std::is_same_v<M, Tensor>)
      a.value.tensor = tensor(v, role);
    else if constexpr (std::is_same_v<M, float>)
      a.value.f32 = v;
    else if constexpr (std::is_same_v<M, int64_t>)
      a.value.i64 = v;
    else if constexpr (std::is_same_v<M, bool>)
      a.value.boolean = v ? 1 : 0;
    else if constexpr (std::is_enum_v<M>)
      a.value.i64 = static_cast<int64_t>(v);
    else if constexpr (std::is_same_v<M, const AttnMetadata*>)
      a.value.attn_meta = v ? attn(*v) : nullptr;
    else if constexpr (std::is_same_v<M, const MoeMetadata*>)
      a.value.moe_meta = v ? moe(*v) : nullptr;
    else if constexpr (std::is_same_v<M, const ExpertWeights*>)
      a.value.experts = v ? experts(*v) : nullptr;
    else if constexpr (std::is_same_v<M, const std::vector<Tensor>*>)
      a.value.tensors = v ? tensor_list(*v) : nullptr;
    else if constexpr (std::is_same_v<M, const QuantParams*>)
      a.value.quant = v ? quant(*v) : nullptr;
    else if constexpr (std::is_same_v<M, const std::vector<std::shared_ptr<const QuantParams>>*>)
      a.value.quants = v && !v->empty() ? quant_list(*v) : nullptr;
    else if constexpr (std::is_pointer_v<M>)
      a.value.present = v != nullptr;
    else
      a.value.present = 1;
    if constexpr (std::is_pointer_v<M>) {
      if (a.kind > OC_ARG_OPAQUE && p_.abi_minor < 1) {  // a 1.0 plugin knows the 1.1 kinds as opaque
        a.kind = OC_ARG_OPAQUE;
        a.value.present = v != nullptr;
      }
    }
  }

  // The step as oc_step_info: the metadata given, else the last the fields carried (empty if none).
  const oc_step_info* step_info(const AttnMetadata* attn = nullptr, const MoeMetadata* moe = nullptr,
                                const Tensor* positions = nullptr);

  const oc_arg* args() const;
  size_t size() const;
  // After the plugin returned OK: the tensors the call writes, copied back from the plugin's memory.
  void copy_back();

  struct Storage;  // abi_marshal.cpp

 private:
  oc_arg& next_arg(const char* name, Role role, int kind);
  oc_tensor tensor(const Tensor& t, Role role);
  const oc_attn_metadata* attn(const AttnMetadata& m);
  const oc_moe_metadata* moe(const MoeMetadata& m);
  const oc_expert_weights* experts(const ExpertWeights& w);
  const oc_tensor_list* tensor_list(const std::vector<Tensor>& ts);
  const oc_quant_params* quant(const QuantParams& q);
  const oc_quant_list* quant_list(const std::vector<std::shared_ptr<const QuantParams>>& qs);
  void fill_quant(oc_quant_params& c, const QuantParams& q);
  const oc_quant_params* plugin_array(std::vector<oc_quant_params>& arr) const;

  const PluginRuntime& p_;
  bool stage_;
  Storage* s_;
};

}  // namespace opchain
