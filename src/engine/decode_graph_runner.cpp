#include "engine/decode_graph_runner.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"

namespace opchain {

std::vector<int64_t> decode_graph_buckets(int64_t max_batch) {
  if (max_batch < 1)
    throw InvalidArgumentError("graph mode needs a largest batch of at least 1, got " + std::to_string(max_batch));
  std::vector<int64_t> sizes;
  for (int64_t s : {1, 2, 4, 8, 16})
    if (s < max_batch) sizes.push_back(s);
  for (int64_t s = 32; s < max_batch; s += 16) sizes.push_back(s);
  sizes.push_back(max_batch);
  return sizes;
}

DecodeGraphRunner::DecodeGraphRunner(const CausalLM& model, const OpsBackend& backend, KvCache& cache,
                                     int64_t max_batch)
    : model_(model), backend_(backend), cache_(cache), sizes_(decode_graph_buckets(max_batch)) {
  if (const std::string why = model.graph_capture_blocker(); !why.empty())
    throw GraphCaptureError("cannot capture decode graphs of " + model.config().architecture + ": " + why);
  graph_runner_ = backend.make_graph_runner();
  // Fixed block-table width: the longest sequence the model allows, and never more blocks than the
  // cache has (a longer table could not be filled anyway).
  const int64_t context_blocks = cache.blocks_for(std::max<int64_t>(model.config().max_position_embeddings, 1));
  max_blocks_ = std::max<int64_t>(1, std::min(context_blocks, cache.num_blocks() - 1));
  for (int64_t s : sizes_) {
    auto b = std::make_unique<Bucket>();
    b->size = s;
    make_buffers(*b);
    buckets_.push_back(std::move(b));
  }
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) capture(**it);
}

DecodeGraphRunner::~DecodeGraphRunner() = default;

static Tensor zeros_i32(Shape s) { return Tensor::empty(DType::I32, s); }  // Tensor::empty zero-fills

void DecodeGraphRunner::make_buffers(Bucket& b) {
  StepContext& c = b.ctx;
  c.input_ids = zeros_i32({b.size});
  c.positions = zeros_i32({b.size});
  c.q_seqlens = zeros_i32({b.size});
  c.kv_seqlens = zeros_i32({b.size});
  c.block_tables = zeros_i32({b.size, max_blocks_});
  c.logits_rows = zeros_i32({b.size});
  c.state_slots = zeros_i32({b.size});
  // Every row's logits, so the model needs no row gather (Note [Graph capture], 3).
  std::iota(c.logits_rows.data<int32_t>(), c.logits_rows.data<int32_t>() + b.size, 0);
  c.block_size = cache_.block_size();
  c.workspace = &pool_;
  b.table_len.assign(static_cast<size_t>(b.size), 0);
  fill_buffers(b, {});  // all padding until a step comes
}

void DecodeGraphRunner::capture(Bucket& b) {
  pool_.reset();
  update(b);
  struct Capturing {
    StepContext& ctx;
    explicit Capturing(StepContext& c) : ctx(c) { ctx.capturing = true; }
    ~Capturing() { ctx.capturing = false; }
  } capturing(b.ctx);
  b.graph = graph_runner_->capture([&] { b.logits = model_.forward(b.ctx, cache_.layers()); });
  b.bound_q_start_loc = b.ctx.attn.q_start_loc.raw();
  b.bound_slots = b.ctx.attn.slot_mapping.raw();
  b.bound_mask = b.ctx.moe.x_active_mask.raw();
  if (b.logits.ndim() != 2 || b.logits.size(0) != b.size)
    throw GraphCaptureError("captured decode step of bucket " + std::to_string(b.size) + " returned logits " +
                            b.logits.shape().str() + ", expected one row per bucket row");
}

bool DecodeGraphRunner::accepts(std::span<const SequenceStep> seqs) const {
  const int64_t batch = static_cast<int64_t>(seqs.size());
  if (batch < 1 || batch > sizes_.back()) return false;
  for (const auto& s : seqs)
    if (s.tokens.size() != 1 || static_cast<int64_t>(s.block_table.size()) > max_blocks_) return false;
  return true;
}

DecodeGraphRunner::Bucket& DecodeGraphRunner::bucket_for(int64_t batch) {
  const auto it = std::lower_bound(sizes_.begin(), sizes_.end(), batch);
  if (batch < 1 || it == sizes_.end())
    throw InvalidArgumentError("no decode graph bucket holds a batch of " + std::to_string(batch) + " (largest " +
                               std::to_string(sizes_.back()) + ")");
  return *buckets_[static_cast<size_t>(it - sizes_.begin())];
}

void DecodeGraphRunner::fill_buffers(Bucket& b, std::span<const SequenceStep> seqs) const {
  const int64_t batch = static_cast<int64_t>(seqs.size());
  if (batch > b.size)
    throw InvalidArgumentError("a decode step of " + std::to_string(batch) + " sequences does not fit bucket " +
                               std::to_string(b.size));
  StepContext& c = b.ctx;
  int32_t* ids = c.input_ids.data<int32_t>();
  int32_t* pos = c.positions.data<int32_t>();
  int32_t* q = c.q_seqlens.data<int32_t>();
  int32_t* kv = c.kv_seqlens.data<int32_t>();
  int32_t* slots = c.state_slots.data<int32_t>();
  for (int64_t i = 0; i < b.size; ++i) {
    int32_t* table = c.block_tables.data<int32_t>() + i * max_blocks_;
    int64_t& written = b.table_len[static_cast<size_t>(i)];
    int64_t len = 0;
    if (i < batch) {
      const SequenceStep& s = seqs[static_cast<size_t>(i)];
      if (s.tokens.size() != 1)
        throw InvalidArgumentError("sequence " + std::to_string(i) + " adds " + std::to_string(s.tokens.size()) +
                                   " tokens; a decode graph replays steps of one token per sequence");
      validate_sequence_step(model_.config(), cache_, s);
      len = static_cast<int64_t>(s.block_table.size());
      if (len > max_blocks_)
        throw InvalidArgumentError("block table of " + std::to_string(len) +
                                   " blocks is wider than the decode graphs' " + std::to_string(max_blocks_));
      ids[i] = s.tokens[0];
      pos[i] = static_cast<int32_t>(s.past_len);
      kv[i] = static_cast<int32_t>(s.past_len + 1);
      slots[i] = s.state_slot;
      std::copy(s.block_table.begin(), s.block_table.end(), table);
    } else {
      // Padding (Note [Graph capture], 4): token 0 at position 0 over one key in the reserved block 0,
      // and no state slot.
      ids[i] = 0;
      pos[i] = 0;
      kv[i] = 1;
      slots[i] = -1;
    }
    q[i] = 1;
    if (written > len) std::fill(table + len, table + written, 0);
    written = len;
  }
  c.num_padding_tokens = b.size - batch;
}

void DecodeGraphRunner::update(Bucket& b) const {
  backend_.update_step_context(b.ctx);
  if (b.graph && (b.ctx.attn.q_start_loc.raw() != b.bound_q_start_loc ||
                  b.ctx.attn.slot_mapping.raw() != b.bound_slots || b.ctx.moe.x_active_mask.raw() != b.bound_mask))
    throw Error(backend_.name() + "::update_step_context moved the step metadata of decode bucket " +
                std::to_string(b.size) +
                "; its captured launches would read the old storage (Note [Graph capture], 2)");
}

Tensor DecodeGraphRunner::replay(const Bucket& b, int64_t batch) const {
  b.graph->replay();
  return b.logits.slice_rows(0, batch);
}

Tensor DecodeGraphRunner::run(std::span<const SequenceStep> seqs) {
  const int64_t batch = static_cast<int64_t>(seqs.size());
  Bucket& b = bucket_for(batch);
  fill_buffers(b, seqs);
  update(b);
  return replay(b, batch);
}

size_t DecodeGraphRunner::launches(int64_t batch) { return bucket_for(batch).graph->kernels().size(); }

}  // namespace opchain
