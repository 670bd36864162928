#include "engine/model_runner.h"

#include <algorithm>

#include "core/error.h"
#include "engine/decode_graph_runner.h"
#include "engine/model_worker.h"

namespace opchain {

ModelRunner::ModelRunner(const CausalLM& model, const DeviceContext& device, KvCache& cache)
    : model_(model),
      backend_(select_backend(device)),
      cache_(cache),
      workspace_(8 << 20),
      workers_(worker_channel(device)) {
  if (workers_) worker_id_ = workers_->open_runner(cache_);
}

ModelRunner::~ModelRunner() {
  if (!workers_) return;
  try {
    workers_->close_runner(worker_id_);
  } catch (const std::exception&) {  // a world already broken has reported why; nothing to add
  }
}

bool ModelRunner::enable_graph_mode(int64_t max_batch) {
  if (workers_) workers_->enable_graph(worker_id_, max_batch);
  if (std::string why = model_.graph_capture_blocker(); !why.empty()) {
    graphs_.reset();
    graph_off_reason_ = std::move(why);
    return false;
  }
  graphs_ = std::make_unique<DecodeGraphRunner>(model_, backend_, cache_, max_batch);
  graph_off_reason_.clear();
  return true;
}

void validate_sequence_step(const ModelConfig& c, const KvCache& cache, const SequenceStep& s) {
  if (s.tokens.empty()) throw InvalidArgumentError("a sequence in the step has no new tokens");
  const int64_t total = s.past_len + static_cast<int64_t>(s.tokens.size());
  if (total > c.max_position_embeddings && c.rope_scaling.type == RopeScalingType::None)
    throw InvalidArgumentError("sequence of " + std::to_string(total) + " tokens exceeds the model's context of " +
                               std::to_string(c.max_position_embeddings));
  if (cache.blocks_for(total) > static_cast<int64_t>(s.block_table.size()))
    throw InvalidArgumentError("block table of " + std::to_string(s.block_table.size()) + " blocks cannot hold " +
                               std::to_string(total) + " tokens");
  if (cache.has_state() && (s.state_slot < 0 || s.state_slot >= cache.state_slots().num_total()))
    throw InvalidArgumentError("sequence has state slot " + std::to_string(s.state_slot) +
                               "; this model's linear-attention "
                               "layers need one of the cache's " +
                               std::to_string(cache.state_slots().num_total()) + " slots");
  for (int32_t id : s.tokens)
    if (id < 0 || id >= c.vocab_size)
      throw InvalidArgumentError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                 std::to_string(c.vocab_size) + ")");
}

// Host tensors of the step are regrown only when a bigger step comes along.
static Tensor fit(Tensor& t, DType dtype, Shape shape) {
  if (t.is_null() || t.numel() < shape.numel()) t = Tensor::empty(dtype, {std::max<int64_t>(shape.numel(), 1)});
  return t.reshape({t.numel()}).slice_rows(0, shape.numel()).reshape(shape);
}

Tensor ModelRunner::forward(std::span<const SequenceStep> seqs) {
  const ModelConfig& c = model_.config();
  const int64_t batch = static_cast<int64_t>(seqs.size());
  if (batch == 0) throw InvalidArgumentError("a step needs at least one sequence");
  if (workers_) {  // checked here first, so that a step the driver refuses never reaches the workers
    for (const auto& s : seqs) validate_sequence_step(c, cache_, s);
    workers_->forward(worker_id_, seqs);
  }
  last_replayed_ = graphs_ && graphs_->accepts(seqs);
  if (last_replayed_) {
    ++replays_;
    return graphs_->run(seqs);
  }
  int64_t n = 0, rows = 0, max_blocks = 1;
  for (const auto& s : seqs) {
    validate_sequence_step(c, cache_, s);
    n += static_cast<int64_t>(s.tokens.size());
    rows += s.all_logits ? static_cast<int64_t>(s.tokens.size()) : 1;
    max_blocks = std::max<int64_t>(max_blocks, static_cast<int64_t>(s.block_table.size()));
  }
  workspace_.reset();
  ctx_.workspace = &workspace_;
  ctx_.block_size = cache_.block_size();
  ctx_.num_padding_tokens = 0;
  ctx_.input_ids = fit(ids_, DType::I32, {n});
  ctx_.positions = fit(positions_, DType::I32, {n});
  ctx_.q_seqlens = fit(q_seqlens_, DType::I32, {batch});
  ctx_.kv_seqlens = fit(kv_seqlens_, DType::I32, {batch});
  ctx_.block_tables = fit(block_tables_, DType::I32, {batch, max_blocks});
  ctx_.logits_rows = fit(logits_rows_, DType::I32, {rows});
  ctx_.state_slots = fit(state_slots_, DType::I32, {batch});
  ctx_.decoded_from = fit(decoded_from_, DType::I32, {batch});
  int64_t t = 0, r = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const auto& s = seqs[static_cast<size_t>(b)];
    const int64_t len = static_cast<int64_t>(s.tokens.size());
    for (int64_t i = 0; i < len; ++i, ++t) {
      ctx_.input_ids.data<int32_t>()[t] = s.tokens[static_cast<size_t>(i)];
      ctx_.positions.data<int32_t>()[t] = static_cast<int32_t>(s.past_len + i);
      if (s.all_logits || i == len - 1) ctx_.logits_rows.data<int32_t>()[r++] = static_cast<int32_t>(t);
    }
    ctx_.q_seqlens.data<int32_t>()[b] = static_cast<int32_t>(len);
    ctx_.kv_seqlens.data<int32_t>()[b] = static_cast<int32_t>(s.past_len + len);
    ctx_.state_slots.data<int32_t>()[b] = s.state_slot;
    ctx_.decoded_from.data<int32_t>()[b] = static_cast<int32_t>(std::clamp<int64_t>(s.decoded_from, 0, INT32_MAX));
    int32_t* table = ctx_.block_tables.data<int32_t>() + b * max_blocks;
    for (int64_t k = 0; k < max_blocks; ++k)
      table[k] = k < static_cast<int64_t>(s.block_table.size()) ? s.block_table[static_cast<size_t>(k)] : 0;
  }
  backend_.update_step_context(ctx_);
  return model_.forward(ctx_, cache_.layers());
}

}  // namespace opchain
