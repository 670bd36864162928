#include <map>
#include <memory>
#include <mutex>

#include "backends/communicator.h"
#include "backends/ops_backend.h"
#include "backends/plugin/plugin_impls.h"
#include "core/error.h"

namespace opchain {

namespace {

// The backend every in-tree vendor uses: host-memory metadata, Local MoE unless ep > 1.
class DefaultOpsBackend final : public OpsBackend {
 public:
  DefaultOpsBackend(std::string vendor, const Registry& reg, const ImplBuilderTable* impls, MoeParallelSizes parallel,
                    int64_t ep_rank, ParallelPlacement placement)
      : vendor_(std::move(vendor)),
        registry_(reg),
        impls_(impls),
        parallel_(parallel),
        ep_rank_(ep_rank),
        placement_(placement) {
    if (const VendorInfo* info = registry_.vendor_info(vendor_); info && info->plugin_impls)
      add_plugin_impl_builders(*info->plugin_impls, plugin_impls_);
  }

  std::string name() const override { return "DefaultOpsBackend(" + vendor_ + ")"; }
  const std::string& vendor() const override { return vendor_; }
  const Registry& registry() const override { return registry_; }
  const ParallelPlacement& placement() const override { return placement_; }
  // The device context's impl where it supplies one, else a plugin vendor's own (vendor ABI 1.1), else
  // the default.
  const ImplBuilder& impl_builder(OpType op) const override {
    if (impls_ && impls_->get(op)) return impls_->get(op);
    if (plugin_impls_.get(op)) return plugin_impls_.get(op);
    return OpsBackend::impl_builder(op);
  }

  void update_step_context(StepContext& ctx) const override {
    const int64_t batch = ctx.batch_size(), n = ctx.num_tokens();
    if (ctx.q_start_loc_storage.is_null() || ctx.q_start_loc_storage.numel() != batch)
      ctx.q_start_loc_storage = Tensor::empty(DType::I32, {batch});
    if (ctx.slot_mapping_storage.is_null() || ctx.slot_mapping_storage.numel() != n)
      ctx.slot_mapping_storage = Tensor::empty(DType::I32, {n});
    if (ctx.x_active_mask_storage.is_null() || ctx.x_active_mask_storage.numel() != n)
      ctx.x_active_mask_storage = Tensor::empty(DType::U8, {n});
    AttnMetadata& m = ctx.attn;
    m.batch_size = batch;
    m.num_tokens = n;
    m.block_size = ctx.block_size;
    m.q_seqlens = ctx.q_seqlens;
    m.kv_seqlens = ctx.kv_seqlens;
    m.block_tables = ctx.block_tables;
    m.q_start_loc = ctx.q_start_loc_storage;
    m.slot_mapping = ctx.slot_mapping_storage;
    m.state_slots = ctx.state_slots;
    m.decoded_from = ctx.decoded_from;
    const int32_t* q_len = ctx.q_seqlens.data<int32_t>();
    const int32_t* kv_len = ctx.kv_seqlens.data<int32_t>();
    int32_t* start = ctx.q_start_loc_storage.data<int32_t>();
    int32_t* slots = ctx.slot_mapping_storage.data<int32_t>();
    const int64_t max_blocks = ctx.block_tables.ndim() == 2 ? ctx.block_tables.size(1) : 0;
    int64_t row = 0;
    const int64_t real = n - ctx.num_padding_tokens;
    m.max_q_seqlen = m.max_kv_seqlen = 0;
    bool decoding = batch > 0;
    m.has_past = false;
    for (int64_t b = 0; b < batch; ++b) {
      start[b] = static_cast<int32_t>(row);
      m.max_q_seqlen = std::max<int64_t>(m.max_q_seqlen, q_len[b]);
      m.max_kv_seqlen = std::max<int64_t>(m.max_kv_seqlen, kv_len[b]);
      decoding = decoding && q_len[b] == 1;
      const int64_t past = kv_len[b] - q_len[b];
      m.has_past = m.has_past || past > 0;
      for (int64_t i = 0; i < q_len[b]; ++i, ++row) {
        if (row >= real) {  // a padding sequence of a graph bucket writes nothing (Note [Graph capture])
          slots[row] = -1;
          continue;
        }
        const int64_t pos = past + i;
        const int64_t logical = pos / ctx.block_size;
        if (logical >= max_blocks)
          throw InvalidArgumentError("sequence " + std::to_string(b) + " position " + std::to_string(pos) +
                                     " has no KV block (block table holds " + std::to_string(max_blocks) + ")");
        const int64_t block = ctx.block_tables.data<int32_t>()[b * max_blocks + logical];
        slots[row] = static_cast<int32_t>(block * ctx.block_size + pos % ctx.block_size);
      }
    }
    for (; row < n; ++row) slots[row] = -1;  // padding rows write nothing
    m.is_decoding = decoding;

    MoeMetadata& moe = ctx.moe;
    moe.ep_size = parallel_.ep_size;
    moe.tp_size = parallel_.tp_size;
    moe.dp_size = parallel_.dp_size;
    moe.ep_rank = ep_rank_;
    // Each expert-parallel rank routes its own slice of the step's rows (backends/fused_moe.cpp).
    const int64_t rows_per_rank = (real + parallel_.ep_size - 1) / std::max<int64_t>(1, parallel_.ep_size);
    moe.comm_type = select_moe_comm_type(rows_per_rank, parallel_);
    if (moe.comm_type != MoeCommType::Local && placement_.moe_comm) moe.comm_type = *placement_.moe_comm;
    moe.num_tokens = real;
    moe.pad_size = ctx.num_padding_tokens;
    moe.x_active_mask = ctx.x_active_mask_storage;
    uint8_t* mask = ctx.x_active_mask_storage.data<uint8_t>();
    for (int64_t t = 0; t < n; ++t) mask[t] = t < real ? 1 : 0;
    // A plugin vendor's own hook runs last, on the filled metadata (Note [Vendor fallback] in ops/registry.h).
    if (const VendorInfo* info = registry_.vendor_info(vendor_); info && info->on_step_context)
      info->on_step_context(ctx.attn, ctx.moe);
  }

 private:
  std::string vendor_;
  const Registry& registry_;
  const ImplBuilderTable* impls_;
  ImplBuilderTable plugin_impls_;  // empty unless the vendor is a plugin with impls
  MoeParallelSizes parallel_;
  int64_t ep_rank_;
  ParallelPlacement placement_;
};

}  // namespace

Communicator& OpsBackend::tp() const {
  static const std::unique_ptr<Communicator> alone = make_single_process_communicator("tp");
  return placement().tp ? *placement().tp : *alone;
}

Communicator& OpsBackend::ep() const {
  static const std::unique_ptr<Communicator> alone = make_single_process_communicator("ep");
  return placement().ep ? *placement().ep : *alone;
}

const OpsBackend& select_backend(const DeviceContext& dev) {
  static std::mutex mu;
  using Key = std::tuple<std::string, const Registry*, const ImplBuilderTable*, int64_t, int64_t, int64_t, int64_t,
                         const Communicator*, const Communicator*, const Communicator*, int64_t, int>;
  static std::map<Key, std::unique_ptr<OpsBackend>> backends;
  if (!dev.registry)
    throw InvalidArgumentError("device context for vendor '" + dev.vendor +
                               "' has no kernel registry (the engine passes builtin_registry())");
  const Registry& reg = *dev.registry;
  if (!reg.has_vendor(dev.vendor)) {
    std::string known;
    for (const auto& v : reg.vendors()) known += (known.empty() ? "" : ", ") + v;
    throw UnsupportedOpError("unknown vendor '" + dev.vendor + "'; registered vendors: " + known);
  }
  std::lock_guard lock(mu);
  const ParallelPlacement& pl = dev.placement;
  const Key key{dev.vendor,
                &reg,
                dev.impls,
                dev.parallel.ep_size,
                dev.parallel.tp_size,
                dev.parallel.dp_size,
                dev.ep_rank,
                pl.world,
                pl.tp,
                pl.ep,
                pl.tp_rank,
                pl.moe_comm ? static_cast<int>(*pl.moe_comm) : -1};
  auto& slot = backends[key];
  if (!slot)
    slot = std::make_unique<DefaultOpsBackend>(dev.vendor, reg, dev.impls, dev.parallel, dev.ep_rank, dev.placement);
  return *slot;
}

}  // namespace opchain
