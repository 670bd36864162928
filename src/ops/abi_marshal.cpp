#include "ops/abi_marshal.h"

#include <cstddef>
#include <cstring>
#include <deque>

#include "core/error.h"

namespace opchain {

namespace {

static_assert(static_cast<int>(MoeCommType::Local) == OC_MOE_COMM_LOCAL &&
                  static_cast<int>(MoeCommType::AllGather) == OC_MOE_COMM_ALLGATHER &&
                  static_cast<int>(MoeCommType::AllToAll) == OC_MOE_COMM_ALLTOALL,
              "oc_moe_comm_type numbers are MoeCommType's");
// A 1.1 plugin's oc_quant_params ends at group_of (plugin_array relies on it).
static_assert(offsetof(oc_quant_params, input_order) == offsetof(oc_quant_params, group_of) + sizeof(oc_tensor));
static_assert(static_cast<int>(QuantScheme::Int4Group) == OC_QUANT_INT4_GROUP &&
                  static_cast<int>(QuantScheme::Int8Channel) == OC_QUANT_INT8_CHANNEL &&
                  static_cast<int>(QuantScheme::Fp8Block) == OC_QUANT_FP8_BLOCK &&
                  static_cast<int>(QuantScheme::Fp8Channel) == OC_QUANT_FP8_CHANNEL,
              "oc_quant_scheme numbers are QuantScheme's");
static_assert(static_cast<int>(ActQuant::None) == OC_ACT_NONE &&
                  static_cast<int>(ActQuant::Int8Token) == OC_ACT_INT8_TOKEN &&
                  static_cast<int>(ActQuant::Fp8Group) == OC_ACT_FP8_GROUP,
              "oc_act_quant numbers are ActQuant's");

// An element of `d`, taken in order: the deque grows once and its elements keep their addresses.
template <class T>
T& take(std::deque<T>& d, size_t& used) {
  if (used == d.size()) d.emplace_back();
  return d[used++];
}

}  // namespace

std::string plugin_label(const PluginRuntime& p) { return "vendor plugin " + p.path + " (vendor '" + p.vendor + "')"; }

struct CallMarshal::Storage {
  struct Staged {
    void* device;
    void* host;
    size_t nbytes;
    bool copy_back;
  };
  std::vector<oc_arg> args;
  std::deque<oc_attn_metadata> attn;
  std::deque<oc_moe_metadata> moe;
  std::deque<oc_expert_weights> experts;
  std::deque<oc_tensor_list> lists;
  std::deque<oc_quant_params> quants;
  std::deque<oc_quant_list> quant_lists;
  std::deque<std::vector<oc_tensor>> tensor_arrays;
  std::deque<std::vector<oc_quant_params>> quant_arrays;
  size_t n_attn = 0, n_moe = 0, n_experts = 0, n_lists = 0, n_quants = 0, n_quant_lists = 0, n_tensor_arrays = 0,
         n_quant_arrays = 0;
  std::vector<Staged> staged;
  oc_step_info step{};
  const AttnMetadata* last_attn = nullptr;
  const MoeMetadata* last_moe = nullptr;

  void reset() {
    args.clear();
    staged.clear();
    n_attn = n_moe = n_experts = n_lists = n_quants = n_quant_lists = n_tensor_arrays = n_quant_arrays = 0;
    last_attn = nullptr;
    last_moe = nullptr;
  }
};

namespace {
struct ThreadStorage {
  std::vector<std::unique_ptr<CallMarshal::Storage>> pool;  // one per nesting depth
  size_t depth = 0;
};
thread_local ThreadStorage t_storage;
}  // namespace

CallMarshal::CallMarshal(const PluginRuntime& p, bool stage) : p_(p), stage_(stage && p.has_memory()) {
  ThreadStorage& t = t_storage;
  if (t.depth == t.pool.size()) t.pool.push_back(std::make_unique<Storage>());
  s_ = t.pool[t.depth++].get();
  s_->reset();
}

CallMarshal::~CallMarshal() {
  for (const Storage::Staged& st : s_->staged) p_.memory.free(st.device, p_.user_data);
  s_->reset();
  --t_storage.depth;
}

const oc_arg* CallMarshal::args() const { return s_->args.data(); }
size_t CallMarshal::size() const { return s_->args.size(); }

oc_arg& CallMarshal::next_arg(const char* name, Role role, int kind) {
  oc_arg& a = s_->args.emplace_back();
  a = oc_arg{};
  a.name = name;
  a.role = static_cast<int32_t>(role);
  a.kind = kind;
  return a;
}

oc_tensor CallMarshal::tensor(const Tensor& t, Role role) {
  if (t.is_null()) return oc_tensor{};
  oc_tensor c{};
  c.data = t.raw();
  c.dtype = static_cast<int32_t>(t.dtype());
  c.device = OC_DEVICE_HOST;
  c.ndim = t.ndim();
  int64_t stride = 1;
  for (int d = t.ndim() - 1; d >= 0; --d) {
    c.shape[d] = t.size(d);
    c.strides[d] = stride;
    stride *= t.size(d);
  }
  if (!stage_) return c;
  // Note [Plugin memory]
  const size_t nbytes = t.nbytes();
  void* dev = p_.memory.alloc(nbytes > 0 ? nbytes : 1, p_.user_data);
  if (!dev)
    throw VendorPluginError(plugin_label(p_) + ": memory hook alloc failed for " + std::to_string(nbytes) + " bytes (" +
                            t.desc() + ")");
  s_->staged.push_back({dev, t.raw(), nbytes, writes(role)});
  if (nbytes > 0 && p_.memory.copy_to_device(dev, t.raw(), nbytes, p_.user_data) != OC_STATUS_OK)
    throw VendorPluginError(plugin_label(p_) + ": memory hook copy_to_device failed for " + t.desc());
  c.data = dev;
  c.device = OC_DEVICE_PLUGIN;
  return c;
}

void CallMarshal::copy_back() {
  for (const Storage::Staged& st : s_->staged)
    if (st.copy_back && st.nbytes > 0 &&
        p_.memory.copy_to_host(st.host, st.device, st.nbytes, p_.user_data) != OC_STATUS_OK)
      throw VendorPluginError(plugin_label(p_) + ": memory hook copy_to_host failed for " + std::to_string(st.nbytes) +
                              " bytes");
}

const oc_attn_metadata* CallMarshal::attn(const AttnMetadata& m) {
  s_->last_attn = &m;
  oc_attn_metadata& c = take(s_->attn, s_->n_attn);
  c = oc_attn_metadata{};
  c.is_decoding = m.is_decoding;
  c.has_past = m.has_past;
  c.batch_size = m.batch_size;
  c.num_tokens = m.num_tokens;
  c.block_size = m.block_size;
  c.max_q_seqlen = m.max_q_seqlen;
  c.max_kv_seqlen = m.max_kv_seqlen;
  c.q_start_loc = tensor(m.q_start_loc, Role::Meta);
  c.q_seqlens = tensor(m.q_seqlens, Role::Meta);
  c.kv_seqlens = tensor(m.kv_seqlens, Role::Meta);
  c.block_tables = tensor(m.block_tables, Role::Meta);
  c.slot_mapping = tensor(m.slot_mapping, Role::Meta);
  c.state_slots = tensor(m.state_slots, Role::Meta);
  return &c;
}

const oc_moe_metadata* CallMarshal::moe(const MoeMetadata& m) {
  s_->last_moe = &m;
  oc_moe_metadata& c = take(s_->moe, s_->n_moe);
  c = oc_moe_metadata{};
  c.comm_type = static_cast<int32_t>(m.comm_type);
  c.ep_size = m.ep_size;
  c.ep_rank = m.ep_rank;
  c.tp_size = m.tp_size;
  c.dp_size = m.dp_size;
  c.num_tokens = m.num_tokens;
  c.pad_size = m.pad_size;
  c.x_active_mask = tensor(m.x_active_mask, Role::Meta);
  c.router_n_groups = m.router_n_groups;
  c.router_topk_groups = m.router_topk_groups;
  return &c;
}

void CallMarshal::fill_quant(oc_quant_params& c, const QuantParams& q) {
  c = oc_quant_params{};
  c.scheme = static_cast<int32_t>(q.scheme);
  c.act = static_cast<int32_t>(q.act);
  c.in_features = q.in_features;
  c.group_size = q.group_size;
  c.act_group = q.act_group;
  c.scales = tensor(q.scales, Role::In);
  c.zeros = tensor(q.zeros, Role::In);
  c.group_of = tensor(q.group_of, Role::In);
  if (!q.input_order.is_null()) {
    if (p_.abi_minor < 2)
      throw VendorPluginError(plugin_label(p_) + ": a " + q.describe() +
                              " weight has its input channels sorted by group (input_order, vendor ABI 1.2), "
                              "which a plugin built against vendor ABI 1." +
                              std::to_string(p_.abi_minor) + " cannot read; build it against vendor ABI 1.2 or later");
    c.input_order = tensor(q.input_order, Role::In);
  }
}

// An array of oc_quant_params as the plugin reads it: a plugin older than 1.2 steps through it with
// its own, shorter struct, so each element is moved down to that stride.
const oc_quant_params* CallMarshal::plugin_array(std::vector<oc_quant_params>& arr) const {
  if (p_.abi_minor >= 2) return arr.data();
  constexpr size_t kStride11 = offsetof(oc_quant_params, input_order);
  char* base = reinterpret_cast<char*>(arr.data());
  for (size_t i = 1; i < arr.size(); ++i)
    std::memmove(base + i * kStride11, base + i * sizeof(oc_quant_params), kStride11);
  return arr.data();
}

const oc_quant_params* CallMarshal::quant(const QuantParams& q) {
  oc_quant_params& c = take(s_->quants, s_->n_quants);
  fill_quant(c, q);
  return &c;
}

const oc_quant_list* CallMarshal::quant_list(const std::vector<std::shared_ptr<const QuantParams>>& qs) {
  std::vector<oc_quant_params>& arr = take(s_->quant_arrays, s_->n_quant_arrays);
  arr.resize(qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    if (qs[i])
      fill_quant(arr[i], *qs[i]);
    else
      arr[i] = oc_quant_params{};
  }
  oc_quant_list& c = take(s_->quant_lists, s_->n_quant_lists);
  c = oc_quant_list{arr.size(), plugin_array(arr)};
  return &c;
}

const oc_tensor_list* CallMarshal::tensor_list(const std::vector<Tensor>& ts) {
  std::vector<oc_tensor>& arr = take(s_->tensor_arrays, s_->n_tensor_arrays);
  arr.resize(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) arr[i] = tensor(ts[i], Role::In);
  oc_tensor_list& c = take(s_->lists, s_->n_lists);
  c = oc_tensor_list{arr.size(), arr.data()};
  return &c;
}

const oc_expert_weights* CallMarshal::experts(const ExpertWeights& w) {
  oc_expert_weights& c = take(s_->experts, s_->n_experts);
  c = oc_expert_weights{};
  c.num_experts = w.num_experts();
  c.intermediate = w.intermediate();
  c.hidden = w.hidden();
  c.dtype = static_cast<int32_t>(w.dtype());
  c.quantized = w.quantized() ? 1 : 0;
  auto mats = [&](const std::vector<Tensor>& ts) {
    std::vector<oc_tensor>& arr = take(s_->tensor_arrays, s_->n_tensor_arrays);
    arr.resize(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) arr[i] = tensor(ts[i], Role::In);
    return arr.data();
  };
  c.gate = mats(w.gate);
  c.up = mats(w.up);
  c.down = mats(w.down);
  if (w.quantized()) {
    auto params = [&](const std::vector<std::shared_ptr<const QuantParams>>& qs) {
      std::vector<oc_quant_params>& arr = take(s_->quant_arrays, s_->n_quant_arrays);
      arr.resize(qs.size());
      for (size_t i = 0; i < qs.size(); ++i) fill_quant(arr[i], *qs[i]);
      return plugin_array(arr);
    };
    c.gate_q = params(w.gate_q);
    c.up_q = params(w.up_q);
    c.down_q = params(w.down_q);
  }
  return &c;
}

const oc_step_info* CallMarshal::step_info(const AttnMetadata* attn_meta, const MoeMetadata* moe_meta,
                                           const Tensor* positions) {
  if (!attn_meta) attn_meta = s_->last_attn;
  if (!moe_meta) moe_meta = s_->last_moe;
  static const AttnMetadata kNoAttn{};
  static const MoeMetadata kNoMoe{};
  const AttnMetadata& m = attn_meta ? *attn_meta : kNoAttn;
  const MoeMetadata& e = moe_meta ? *moe_meta : kNoMoe;
  oc_step_info& s = s_->step;
  s = oc_step_info{};
  const oc_attn_metadata* ca = attn(m);
  s.batch_size = m.batch_size;
  s.num_tokens = m.num_tokens;
  s.num_padding_tokens = e.pad_size;
  s.block_size = m.block_size;
  s.max_q_seqlen = m.max_q_seqlen;
  s.max_kv_seqlen = m.max_kv_seqlen;
  s.is_decoding = m.is_decoding;
  s.has_past = m.has_past;
  s.q_start_loc = ca->q_start_loc;
  s.q_seqlens = ca->q_seqlens;
  s.kv_seqlens = ca->kv_seqlens;
  s.block_tables = ca->block_tables;
  s.slot_mapping = ca->slot_mapping;
  s.state_slots = ca->state_slots;
  s.attn = ca;
  s.moe = moe(e);
  if (positions) s.positions = tensor(*positions, Role::Meta);
  return &s;
}

}  // namespace opchain
