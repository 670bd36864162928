#pragma once
// The serving engine: requests join and leave a running batch at any step (continuous batching),
// long prompts are prefilled in chunks under a per-step token budget, and when the paged KV cache
// runs out of blocks the newest running sequence is preempted and later recomputed (its tokens are
// kept, so its output does not change). add_request/abort are thread-safe; step() runs on one thread.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/compiled_grammar.h"
#include "engine/detokenizer.h"
#include "engine/kv_cache.h"
#include "engine/logprobs.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"

namespace opchain {

class Tokenizer;
class TokenVocabulary;

struct EngineConfig {
  int64_t block_size = 16;
  int64_t num_blocks = 0;                // 0: derive from kv_cache_bytes
  size_t kv_cache_bytes = 512ull << 20;  // KV blocks and, for hybrid models, state slots (Note [State memory])
  int64_t state_slots = 0;               // hybrid models: 0 = derive (see LLMEngine's constructor)
  int64_t max_batch = 64;                // running sequences
  int64_t max_tokens_per_step = 2048;    // token budget of one step (decode tokens + prefill chunks)
  int64_t prefill_chunk = 512;           // most prompt tokens of one sequence in one step
  int64_t max_queue = 1024;              // waiting requests beyond which add_request refuses
  bool graph = false;  // decode steps replay graphs captured at start (Note [Graph capture]); CLI: on unless --eager
};

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
  int64_t max_new_tokens = 256;
  std::vector<std::string> stop;        // stop strings (not included in the text)
  std::vector<int32_t> stop_token_ids;  // empty: the model's eos ids
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  // -1: none. 0..kMaxTopLogprobs: each output token's log-probability and this many most likely
  // alternatives (engine/logprobs.h). Stop tokens, which add no text, get none.
  int logprobs = -1;
  // Structured output (docs/structured-outputs.md): when set, every token is drawn from those the
  // grammar allows after the text so far (a stop token only once the text is complete), e.g.
  // compile_json_schema(...) or grammar_for_response_format(...). Needs the engine's tokenizer.
  std::shared_ptr<const CompiledGrammar> grammar;
};

enum class FinishReason { None, Stop, Length, Aborted };
const char* finish_reason_name(FinishReason r);

struct RequestOutput;

// One streaming update: the tokens and text a step added to a request.
struct StreamEvent {
  uint64_t request_id = 0;
  int32_t token = -1;      // the token sampled this step (-1 on an abort)
  std::string text_delta;  // complete UTF-8 text that became safe to show
  // With GenerationRequest::logprobs: the tokens whose text this event completes (text held back
  // for a multi-byte character or a possible stop string arrives later with its tokens).
  std::vector<StepLogprobs> logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;
  // Set on the finished event: a stop token or a last token with no text sends no event of its
  // own, so counting events cannot give the usage a server reports.
  int64_t prompt_tokens = 0, completion_tokens = 0;
  // Set on the finished event, valid during the callback: the request's whole output, as
  // take_output gives it to callers that do not stream (the public API, src/api, reads it).
  const RequestOutput* output = nullptr;
};
using StreamCallback = std::function<void(const StreamEvent&)>;

struct RequestOutput {
  uint64_t request_id = 0;
  std::vector<int32_t> ids;  // generated ids (the eos id included when it stopped the request)
  std::string text;
  std::vector<StepLogprobs> logprobs;  // with GenerationRequest::logprobs: one per output token but stop tokens
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  FinishReason finish_reason = FinishReason::None;
};

struct EngineStats {
  int64_t running = 0, waiting = 0;
  int64_t blocks_used = 0, blocks_free = 0;
  int64_t state_slots_used = 0, state_slots_total = 0;  // hybrid models (Note [State memory])
  size_t kv_cache_bytes = 0, state_bytes = 0;           // what the cache holds, the state pool included
  int64_t preemptions = 0;
  int64_t prompt_tokens_total = 0, generated_tokens_total = 0;
  int64_t steps = 0;
  int64_t graph_steps = 0;  // steps that replayed a captured decode graph
  double last_step_ms = 0;
};

class QueueFullError : public InvalidArgumentError {
 public:
  using InvalidArgumentError::InvalidArgumentError;
};

class LLMEngine {
 public:
  // `tokenizer` may be null (no text, ids only). eos_ids: the default stop tokens.
  LLMEngine(const CausalLM& model, const DeviceContext& device, const Tokenizer* tokenizer, EngineConfig config,
            std::vector<int32_t> eos_ids);
  ~LLMEngine();

  // Validates (empty prompt, ids outside the vocabulary, prompt + max_new_tokens past the context or
  // the KV cache, sampling parameters) and queues. Throws InvalidArgumentError / QueueFullError.
  uint64_t add_request(GenerationRequest request, StreamCallback on_event = {});
  // Finishes the request with FinishReason::Aborted at the next step and frees its KV blocks.
  void abort(uint64_t request_id);

  // Runs one scheduling step if there is work; returns false when idle.
  bool step();
  bool has_work() const;
  // Blocks until there is work or `timeout_ms` passes (for a serving loop).
  void wait_for_work(int timeout_ms) const;
  // Runs the given requests to completion together; outputs in input order.
  std::vector<RequestOutput> generate(std::vector<GenerationRequest> requests);
  // The finished output of a request (kept until taken).
  std::optional<RequestOutput> take_output(uint64_t request_id);

  // Thread-safe snapshot, refreshed after every step.
  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  // Graph mode state: graph_mode(), graph_off_reason(), the captured buckets.
  const ModelRunner& runner() const { return *runner_; }
  int64_t max_context() const;

 private:
  struct Sequence;
  void drain_inbox();
  void finish(Sequence& s, FinishReason reason);
  void preempt(Sequence& s);
  bool ensure_blocks(Sequence& s, int64_t tokens);
  void emit(Sequence& s, int32_t token);
  void take_logprobs(Sequence& s, StreamEvent& ev);
  void publish_stats(double step_ms);  // step_ms < 0: counts only
  std::shared_ptr<const TokenVocabulary> grammar_vocabulary();

  const CausalLM& model_;
  const Tokenizer* tokenizer_;
  EngineConfig config_;
  std::vector<int32_t> eos_ids_;
  std::mutex vocab_mu_;
  std::shared_ptr<const TokenVocabulary> grammar_vocab_;  // built on the first constrained request
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<ModelRunner> runner_;

  mutable std::mutex inbox_mu_;
  mutable std::condition_variable inbox_cv_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::vector<uint64_t> aborts_;
  uint64_t next_id_ = 1;
  int64_t queued_ = 0;  // inbox + waiting, for max_queue

  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  std::vector<std::unique_ptr<Sequence>> all_;
  std::vector<RequestOutput> finished_;

  mutable std::mutex stats_mu_;
  EngineStats stats_;
};

}  // namespace opchain
