#pragma once
// Runs one forward step of a batch of sequences: builds the StepContext from each sequence's new
// tokens, cached length and block table, lets the backend fill the step metadata, and calls the model.
#include <climits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/ops_backend.h"
#include "engine/kv_cache.h"
#include "models/causal_lm.h"

namespace opchain {

struct SequenceStep {
  std::span<const int32_t> tokens;       // new tokens of this step
  int64_t past_len = 0;                  // tokens already in the cache
  std::span<const int32_t> block_table;  // covers past_len + tokens.size() positions
  bool all_logits = false;               // logits for every new token (else only the last)
  int32_t state_slot = -1;               // hybrid models: the sequence's state slot (KvCache::state_slots())
  // Positions from here on were produced by decode steps (the prompt's length): where a step carries
  // several of them (a preempted sequence recomputing), their queries take the decode path again
  // (AttnMetadata::decoded_from), so the recompute changes no bit.
  int64_t decoded_from = INT32_MAX;
};

// Throws InvalidArgumentError when a sequence's step cannot run: no tokens, ids outside the
// vocabulary, past the model's context, a block table too short for its positions, or (models with
// linear-attention layers) no valid state slot.
void validate_sequence_step(const ModelConfig& config, const KvCache& cache, const SequenceStep& s);

class DecodeGraphRunner;
class WorkerChannel;

class ModelRunner {
 public:
  ModelRunner(const CausalLM& model, const DeviceContext& device, KvCache& cache);
  ~ModelRunner();
  // Returns f32 logits rows in order: per sequence, all its tokens (all_logits) or its last token.
  // The tensor lives in the runner's workspace until the next call.
  Tensor forward(std::span<const SequenceStep> seqs);
  const CausalLM& model() const { return model_; }
  KvCache& cache() { return cache_; }

  // Graph mode (Note [Graph capture] in backends/graph_runner.h): captures decode graphs for
  // batches up to max_batch now; afterwards decode steps that fit a bucket replay, and prefill or
  // larger steps run eagerly. Returns false, and stays eager, when the model refuses capture (the
  // reason is in graph_off_reason()); throws GraphCaptureError when a kernel is not capture-safe.
  bool enable_graph_mode(int64_t max_batch);
  bool graph_mode() const { return graphs_ != nullptr; }
  const std::string& graph_off_reason() const { return graph_off_reason_; }
  const DecodeGraphRunner* graphs() const { return graphs_.get(); }
  // Whether the last forward() replayed a graph, and how many have.
  bool last_step_replayed() const { return last_replayed_; }
  int64_t graph_replays() const { return replays_; }

 private:
  const CausalLM& model_;
  const OpsBackend& backend_;
  KvCache& cache_;
  Workspace workspace_;
  StepContext ctx_;
  Tensor ids_, positions_, q_seqlens_, kv_seqlens_, block_tables_, logits_rows_, state_slots_, decoded_from_;
  std::unique_ptr<DecodeGraphRunner> graphs_;
  std::string graph_off_reason_ = "graph mode not enabled";
  bool last_replayed_ = false;
  int64_t replays_ = 0;
  // On the driver of a multi-rank world: where this runner's commands go (Note [Driver and workers]
  // in engine/model_worker.h), and its number there.
  WorkerChannel* workers_ = nullptr;
  int64_t worker_id_ = 0;
};

}  // namespace opchain
