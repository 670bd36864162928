#include "backends/fused_moe.h"

#include <algorithm>
#include <cstring>

#include "backends/communicator.h"

namespace opchain {

DefaultFusedMoeImpl::DefaultFusedMoeImpl(const OpsBackend& backend, const ImplBuildParams& p)
    : backend_(backend), kernel_(std::make_unique<KernelImpl<OpType::FusedMoe>>(backend, p, "DefaultFusedMoeImpl")) {
  site_ = kernel_->site();
  local_meta_.comm_type = MoeCommType::Local;
}

void DefaultFusedMoeImpl::forward(const StepContext& ctx, const FusedMoeArgs& args) const {
  if (ctx.moe.comm_type == MoeCommType::Local) {
    if (args.experts->total_experts > args.experts->num_experts())
      throw UnsupportedOpError(
          "fused_moe at " + site_.module_path + ": this rank holds " + std::to_string(args.experts->num_experts()) +
          " of " + std::to_string(args.experts->total_experts) + " experts but the step's MoE comm type is 'local'");
    (*kernel_)(args);
    return;
  }
  const Communicator& ep = backend_.ep();
  const int64_t ranks = ep.size(), local = args.experts->num_experts();
  if (ranks * local != args.experts->total_experts)
    throw UnsupportedOpError("fused_moe at " + site_.module_path + ": " + std::to_string(ranks) +
                             " expert-parallel ranks of " + std::to_string(local) + " experts each do not make the " +
                             std::to_string(args.experts->total_experts) + " experts of the layer");
  // The exchange is a host step, so a captured decode graph replays it between the kernels.
  const CommStats before = ep.stats();
  launch_host_step(
      std::string("moe_") + moe_comm_type_name(ctx.moe.comm_type), &site_,
      [this, &ctx, args] { forward_expert_parallel(ctx, args); },
      [this, &ctx, before] {
        const CommStats& now = backend_.ep().stats();
        return std::string("comm=") + moe_comm_type_name(ctx.moe.comm_type) +
               " ep=" + std::to_string(backend_.ep().size()) +
               " bytes_sent=" + std::to_string(now.bytes_sent - before.bytes_sent) +
               " bytes_received=" + std::to_string(now.bytes_received - before.bytes_received);
      });
}

void DefaultFusedMoeImpl::forward_expert_parallel(const StepContext& ctx, const FusedMoeArgs& args) const {
  const int64_t n = args.hidden.size(0), ranks = backend_.ep().size();
  const int64_t chunk = (n + ranks - 1) / ranks;
  if (ctx.moe.comm_type == MoeCommType::AllGather)
    all_gather_path(ctx, args, chunk);
  else
    all_to_all_path(ctx, args, chunk);
}

namespace {

// Buffers of the exchange, kept between steps so that a replayed graph allocates nothing once warm.
// One set per thread, shared by every MoE layer: layers run one after another.
struct Scratch {
  std::vector<float> slice_rows, slice_w, all_rows, all_w, pair_x, pair_w, pair_out, sums, slice_out, all_out, back;
  std::vector<int32_t> slice_ids, all_ids, pair_e, pair_src, send_meta, recv_meta;
  std::vector<uint8_t> slice_active, all_active;
  std::vector<int64_t> send_counts, recv_counts, send_bytes, recv_bytes, offsets, fill;
};

Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

bool row_active(const StepContext& ctx, int64_t t) {
  const Tensor& mask = ctx.moe.x_active_mask;
  return mask.is_null() || t >= mask.numel() || mask.data<uint8_t>()[t] != 0;
}

template <class T>
T* sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

void DefaultFusedMoeImpl::compute_pairs(const FusedMoeArgs& args, int64_t m, const float* x, const int32_t* expert,
                                        const float* weight, float* out) const {
  if (m == 0) return;
  const int64_t h = args.hidden.size(1);
  local_meta_.num_tokens = m;
  local_meta_.pad_size = 0;
  FusedMoeArgs pairs{Tensor::view(x, DType::F32, {m, h}),
                     args.experts,
                     Tensor::view(weight, DType::F32, {m, 1}),
                     Tensor::view(expert, DType::I32, {m, 1}),
                     Tensor::view(out, DType::F32, {m, h}),
                     &local_meta_,
                     args.precision};
  (*kernel_)(pairs);
}

void DefaultFusedMoeImpl::gather_slices(const FusedMoeArgs& args, int64_t chunk, const float* slice_out) const {
  Communicator& ep = backend_.ep();
  const int64_t n = args.hidden.size(0), h = args.hidden.size(1);
  float* all = sized(scratch().all_out, ep.size() * chunk * h);
  ep.all_gather(slice_out, chunk * h * static_cast<int64_t>(sizeof(float)), all);
  std::memcpy(args.out.data<float>(), all, static_cast<size_t>(n * h) * sizeof(float));
}

void DefaultFusedMoeImpl::all_gather_path(const StepContext& ctx, const FusedMoeArgs& args, int64_t chunk) const {
  Communicator& ep = backend_.ep();
  Scratch& s = scratch();
  const int64_t n = args.hidden.size(0), h = args.hidden.size(1), k = args.topk_ids.size(1);
  const int64_t ranks = ep.size(), me = ep.rank(), begin = me * chunk, total = ranks * chunk;
  const int64_t first = args.experts->first_expert, local = args.experts->num_experts();
  // This rank's slice, padded to `chunk` rows so every rank sends the same shape.
  float* rows = sized(s.slice_rows, chunk * h);
  int32_t* ids = sized(s.slice_ids, chunk * k);
  float* weights = sized(s.slice_w, chunk * k);
  uint8_t* active = sized(s.slice_active, chunk);
  for (int64_t i = 0; i < chunk; ++i) {
    const int64_t t = begin + i;
    const bool real = t < n && row_active(ctx, t);
    active[i] = real ? 1 : 0;
    if (real) {
      std::memcpy(rows + i * h, args.hidden.data<float>() + t * h, static_cast<size_t>(h) * sizeof(float));
      std::memcpy(ids + i * k, args.topk_ids.data<int32_t>() + t * k, static_cast<size_t>(k) * sizeof(int32_t));
      std::memcpy(weights + i * k, args.topk_weights.data<float>() + t * k, static_cast<size_t>(k) * sizeof(float));
    } else {
      std::fill(rows + i * h, rows + (i + 1) * h, 0.0f);
      std::fill(ids + i * k, ids + (i + 1) * k, 0);
      std::fill(weights + i * k, weights + (i + 1) * k, 0.0f);
    }
  }
  float* all_rows = sized(s.all_rows, total * h);
  int32_t* all_ids = sized(s.all_ids, total * k);
  float* all_w = sized(s.all_w, total * k);
  uint8_t* all_active = sized(s.all_active, total);
  ep.all_gather(rows, chunk * h * static_cast<int64_t>(sizeof(float)), all_rows);
  ep.all_gather(ids, chunk * k * static_cast<int64_t>(sizeof(int32_t)), all_ids);
  ep.all_gather(weights, chunk * k * static_cast<int64_t>(sizeof(float)), all_w);
  ep.all_gather(active, chunk, all_active);
  // Every gathered pair whose expert lives here, as the rows of one local fused_moe call.
  int64_t m = 0;
  for (int64_t t = 0; t < total; ++t)
    if (all_active[t])
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = all_ids[t * k + j] - first;
        if (e >= 0 && e < local) ++m;
      }
  float* px = sized(s.pair_x, m * h);
  int32_t* pe = sized(s.pair_e, m);
  float* pw = sized(s.pair_w, m);
  int32_t* src = sized(s.pair_src, m);
  int64_t i = 0;
  for (int64_t t = 0; t < total; ++t)
    if (all_active[t])
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = all_ids[t * k + j] - first;
        if (e < 0 || e >= local) continue;
        std::memcpy(px + i * h, all_rows + t * h, static_cast<size_t>(h) * sizeof(float));
        pe[i] = static_cast<int32_t>(e);
        pw[i] = all_w[t * k + j];
        src[i] = static_cast<int32_t>(t);
        ++i;
      }
  float* pout = sized(s.pair_out, m * h);
  compute_pairs(args, m, px, pe, pw, pout);
  // This rank's experts' weighted sums for every gathered row; each slice's total goes to its owner.
  float* sums = sized(s.sums, total * h);
  std::fill(sums, sums + total * h, 0.0f);
  for (int64_t p = 0; p < m; ++p) {
    float* dst = sums + static_cast<int64_t>(src[p]) * h;
    const float* r = pout + p * h;
    for (int64_t c = 0; c < h; ++c) dst[c] += r[c];
  }
  float* slice_out = sized(s.slice_out, chunk * h);
  ep.reduce_scatter_sum(sums, slice_out, chunk * h);
  gather_slices(args, chunk, slice_out);
}

void DefaultFusedMoeImpl::all_to_all_path(const StepContext& ctx, const FusedMoeArgs& args, int64_t chunk) const {
  Communicator& ep = backend_.ep();
  Scratch& s = scratch();
  const int64_t n = args.hidden.size(0), h = args.hidden.size(1), k = args.topk_ids.size(1);
  const int64_t ranks = ep.size(), me = ep.rank(), begin = me * chunk, end = std::min(n, begin + chunk);
  const int64_t local = args.experts->num_experts();
  const int32_t* topk = args.topk_ids.data<int32_t>();
  const float* topw = args.topk_weights.data<float>();
  // 1. Count this slice's (row, expert) pairs per owning rank, then pack them owner by owner.
  int64_t* send_counts = sized(s.send_counts, ranks);
  std::fill(send_counts, send_counts + ranks, 0);
  for (int64_t t = begin; t < end; ++t)
    if (row_active(ctx, t))
      for (int64_t j = 0; j < k; ++j) ++send_counts[topk[t * k + j] / local];
  int64_t* offsets = sized(s.offsets, ranks + 1);
  int64_t* fill = sized(s.fill, ranks);
  offsets[0] = 0;
  for (int64_t r = 0; r < ranks; ++r) offsets[r + 1] = offsets[r] + send_counts[r], fill[r] = offsets[r];
  const int64_t sent = offsets[ranks];
  float* send_rows = sized(s.pair_x, sent * h);
  // A pair's expert (local to its owner) and weight travel together as two 4-byte words.
  int32_t* send_meta = sized(s.send_meta, 2 * sent);
  int32_t* src = sized(s.pair_src, sent);
  for (int64_t t = begin; t < end; ++t)
    if (row_active(ctx, t))
      for (int64_t j = 0; j < k; ++j) {
        const int32_t e = topk[t * k + j];
        const int64_t at = fill[e / local]++;
        std::memcpy(send_rows + at * h, args.hidden.data<float>() + t * h, static_cast<size_t>(h) * sizeof(float));
        send_meta[2 * at] = static_cast<int32_t>(e % local);
        std::memcpy(&send_meta[2 * at + 1], &topw[t * k + j], sizeof(float));
        src[at] = static_cast<int32_t>(t - begin);
      }
  // 2. Counts first, so every rank knows what it receives.
  int64_t* recv_counts = sized(s.recv_counts, ranks);
  ep.all_to_all(send_counts, sizeof(int64_t), recv_counts);
  int64_t received = 0;
  for (int64_t r = 0; r < ranks; ++r) received += recv_counts[r];
  int64_t* send_bytes = sized(s.send_bytes, ranks);
  int64_t* recv_bytes = sized(s.recv_bytes, ranks);
  const std::span<const int64_t> sb(send_bytes, static_cast<size_t>(ranks)), rb(recv_bytes, static_cast<size_t>(ranks));
  const auto set_bytes = [&](const int64_t* out_counts, const int64_t* in_counts, int64_t unit) {
    for (int64_t r = 0; r < ranks; ++r) send_bytes[r] = out_counts[r] * unit, recv_bytes[r] = in_counts[r] * unit;
  };
  const int64_t row_bytes = h * static_cast<int64_t>(sizeof(float)), meta_bytes = 2 * sizeof(int32_t);
  // 3. Dispatch: the rows, then their (expert, weight) words.
  float* recv_rows = sized(s.all_rows, received * h);
  int32_t* recv_meta = sized(s.recv_meta, 2 * received);
  set_bytes(send_counts, recv_counts, row_bytes);
  ep.all_to_all_v(send_rows, sb, recv_rows, rb);
  set_bytes(send_counts, recv_counts, meta_bytes);
  ep.all_to_all_v(send_meta, sb, recv_meta, rb);
  // 4. This rank's experts on what it received.
  int32_t* pe = sized(s.pair_e, received);
  float* pw = sized(s.pair_w, received);
  for (int64_t i = 0; i < received; ++i) {
    pe[i] = recv_meta[2 * i];
    std::memcpy(&pw[i], &recv_meta[2 * i + 1], sizeof(float));
  }
  float* pout = sized(s.pair_out, received * h);
  compute_pairs(args, received, recv_rows, pe, pw, pout);
  // 5. Combine: the weighted results go back the way their rows came, and add up per row.
  float* back = sized(s.back, sent * h);
  set_bytes(recv_counts, send_counts, row_bytes);
  ep.all_to_all_v(pout, sb, back, rb);
  float* slice_out = sized(s.slice_out, chunk * h);
  std::fill(slice_out, slice_out + chunk * h, 0.0f);
  for (int64_t p = 0; p < sent; ++p) {
    float* dst = slice_out + static_cast<int64_t>(src[p]) * h;
    const float* r = back + p * h;
    for (int64_t c = 0; c < h; ++c) dst[c] += r[c];
  }
  gather_slices(args, chunk, slice_out);
}

}  // namespace opchain
