#pragma once
// Runs one forward step of a batch of sequences: builds the StepContext from each sequence's new
// tokens, cached length and block table, lets the backend fill the step metadata, and calls the model.
#include <span>
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
};

class ModelRunner {
 public:
  ModelRunner(const CausalLM& model, const DeviceContext& device, KvCache& cache);
  // Returns f32 logits rows in order: per sequence, all its tokens (all_logits) or its last token.
  // The tensor lives in the runner's workspace until the next call.
  Tensor forward(std::span<const SequenceStep> seqs);
  const CausalLM& model() const { return model_; }
  KvCache& cache() { return cache_; }

 private:
  const CausalLM& model_;
  const OpsBackend& backend_;
  KvCache& cache_;
  Workspace workspace_;
  StepContext ctx_;
  Tensor ids_, positions_, q_seqlens_, kv_seqlens_, block_tables_, logits_rows_;
};

}  // namespace opchain
