#pragma once
// Graph mode for decode steps (Note [Graph capture] in backends/graph_runner.h). A decode batch of B
// sequences runs in the smallest bucket >= B, padded; each bucket was captured once, at
// construction, and is replayed: fill_buffers copies the step in, update refreshes the host-side
// metadata the captured launches read, replay runs them.
//
// Buckets: 1, 2, 4, 8, 16, then every multiple of 16 below max_batch, then max_batch itself (so
// max_batch 64 gives 1 2 4 8 16 32 48 64; max_batch 20 gives 1 2 4 8 16 20). Small batches are the
// common decode case and the padding waste is at most half there; past 16 a step of 16 keeps the
// waste under 16 rows without capturing every size.
//
// Memory: all buckets share one Workspace for their activations. Buckets never run at the same time
// and every replay rewrites each activation before reading it, so they may overlap; capturing the
// largest bucket first sizes the pool once and every smaller bucket's (same-order, smaller)
// allocations land inside it: the pool costs one largest-bucket step, not the sum over buckets.
// Each bucket owns its fixed inputs (make_buffers) and its StepContext, whose address its launches
// hold.
#include <memory>
#include <span>
#include <vector>

#include "backends/ops_backend.h"
#include "engine/kv_cache.h"
#include "engine/model_runner.h"

namespace opchain {

// The bucket sizes for a largest decode batch of max_batch (see above).
std::vector<int64_t> decode_graph_buckets(int64_t max_batch);

class DecodeGraphRunner {
 public:
  // One bucket: its fixed inputs (ctx's tensors), the StepContext its launches point at, the graph.
  struct Bucket {
    int64_t size = 0;
    StepContext ctx;                 // never moves: captured launches hold &ctx.attn and &ctx.moe
    std::vector<int64_t> table_len;  // per row, block-table entries written; the rest of the row is 0
    Tensor logits;                   // [size, vocab] in the shared pool
    std::unique_ptr<CapturedGraph> graph;
    // The metadata storage the launches were bound to; update() checks that it stayed put.
    const void* bound_q_start_loc = nullptr;
    const void* bound_slots = nullptr;
    const void* bound_mask = nullptr;
  };

  // Captures every bucket up to max_batch, largest first, with all-padding inputs (so capture
  // writes nothing into the cache). Throws GraphCaptureError (a kernel that is not capture-safe, a
  // model whose graph_capture_blocker() is set) and InvalidArgumentError for max_batch < 1.
  DecodeGraphRunner(const CausalLM& model, const OpsBackend& backend, KvCache& cache, int64_t max_batch);
  ~DecodeGraphRunner();
  DecodeGraphRunner(const DecodeGraphRunner&) = delete;
  DecodeGraphRunner& operator=(const DecodeGraphRunner&) = delete;

  // Whether `seqs` is a step a bucket can replay: every sequence adds one token, the batch fits the
  // largest bucket and every block table fits the buckets' fixed width.
  bool accepts(std::span<const SequenceStep> seqs) const;
  // fill_buffers + update + replay. Returns logits [batch, vocab], valid until the next step.
  Tensor run(std::span<const SequenceStep> seqs);

  // The parts of run(), public so tests can check that each is needed.
  Bucket& bucket_for(int64_t batch);
  // Copies the step's inputs into the bucket's buffers and pads the rest (Note [Graph capture], 4).
  // Validates ids and block tables as ModelRunner::forward does.
  void fill_buffers(Bucket& b, std::span<const SequenceStep> seqs) const;
  // Refreshes the host-side metadata the captured launches read, in place.
  void update(Bucket& b) const;
  // Runs the captured launches; returns the first `batch` rows of the bucket's logits.
  Tensor replay(const Bucket& b, int64_t batch) const;

  const std::vector<int64_t>& buckets() const { return sizes_; }
  int64_t max_blocks_per_seq() const { return max_blocks_; }
  size_t pool_bytes() const { return pool_.reserved_bytes(); }
  // Kernel launches one replay of the bucket for `batch` runs.
  size_t launches(int64_t batch);

 private:
  // Allocates the bucket's fixed inputs (Note [Graph capture], 1) and pads every row.
  void make_buffers(Bucket& b);
  void capture(Bucket& b);

  const CausalLM& model_;
  const OpsBackend& backend_;
  KvCache& cache_;
  std::unique_ptr<GraphRunner> graph_runner_;
  std::vector<int64_t> sizes_;                    // ascending
  std::vector<std::unique_ptr<Bucket>> buckets_;  // same order; held by pointer: launches point into them
  int64_t max_blocks_ = 0;
  Workspace pool_;
};

}  // namespace opchain
