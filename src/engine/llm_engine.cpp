#include "engine/llm_engine.h"

#include <algorithm>
#include <chrono>

#include "engine/grammar_matcher.h"
#include "engine/token_vocabulary.h"
#include "io/tokenizer.h"

namespace opchain {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::None:
      return "none";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Aborted:
      return "abort";
  }
  return "?";
}

struct LLMEngine::Sequence {
  uint64_t id = 0;
  GenerationRequest req;
  StreamCallback on_event;
  std::vector<int32_t> tokens;  // prompt, then generated
  int64_t prompt_len = 0;
  int64_t computed = 0;  // tokens whose K/V are in the cache
  std::vector<int32_t> blocks;
  int32_t state_slot = -1;  // hybrid models: held from admission to finish or preemption
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<IncrementalDetokenizer> detok;
  std::unique_ptr<StopMatcher> stop;
  std::unique_ptr<GrammarMatcher> grammar;  // structured output, when the request asked for it
  std::vector<uint64_t> allowed;            // this step's token mask (grammar only), reused
  std::string text;
  std::vector<StepLogprobs> logprobs;  // every output token's, when asked for
  size_t logprobs_sent = 0;            // how many of them stream events carried
  FinishReason finish_reason = FinishReason::None;
  bool done = false;

  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
};

LLMEngine::LLMEngine(const CausalLM& model, const DeviceContext& device, const Tokenizer* tokenizer,
                     EngineConfig config, std::vector<int32_t> eos_ids)
    : model_(model), tokenizer_(tokenizer), config_(config), eos_ids_(std::move(eos_ids)) {
  if (config_.max_batch <= 0 || config_.max_tokens_per_step <= 0 || config_.prefill_chunk <= 0)
    throw InvalidArgumentError("engine limits (max_batch, max_tokens_per_step, prefill_chunk) must be positive");
  if (config_.state_slots < 0)
    throw InvalidArgumentError("state slots must be positive (or 0: derived from the cache budget), got " +
                               std::to_string(config_.state_slots));
  // Hybrid models: one state slot per running sequence. Unless set, as many slots as max_batch fit
  // in half the byte budget (at least one); the KV blocks take the rest (Note [State memory]).
  const ModelConfig& mc = model.cache_config();  // this rank's KV heads (Note [Tensor parallel])
  const size_t per_seq = KvCache::state_bytes_per_sequence(mc);
  int64_t slots = 1;
  if (per_seq > 0) {
    slots = config_.state_slots > 0
                ? config_.state_slots
                : std::clamp<int64_t>(static_cast<int64_t>(config_.kv_cache_bytes / 2 / per_seq), 1, config_.max_batch);
  }
  const size_t state_total = per_seq * static_cast<size_t>(slots);
  const size_t kv_budget = config_.kv_cache_bytes > state_total ? config_.kv_cache_bytes - state_total : 0;
  const DType kv_dtype = kv_cache_dtype(device.matmul_precision);
  const int64_t blocks = config_.num_blocks > 0
                             ? config_.num_blocks
                             : KvCache::blocks_for_bytes(mc, config_.block_size, kv_budget, kv_dtype);
  cache_ = std::make_unique<KvCache>(mc, blocks, config_.block_size, slots, kv_dtype);
  runner_ = std::make_unique<ModelRunner>(model, device, *cache_);
  if (config_.graph) runner_->enable_graph_mode(config_.max_batch);  // off, with a reason, if the model refuses
  publish_stats(-1);
}

LLMEngine::~LLMEngine() = default;

int64_t LLMEngine::max_context() const { return model_.config().max_position_embeddings; }

uint64_t LLMEngine::add_request(GenerationRequest req, StreamCallback on_event) {
  const ModelConfig& c = model_.config();
  if (req.prompt_ids.empty()) throw InvalidArgumentError("the prompt is empty");
  for (int32_t id : req.prompt_ids)
    if (id < 0 || id >= c.vocab_size)
      throw InvalidArgumentError("prompt token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                 std::to_string(c.vocab_size) + ")");
  if (req.max_new_tokens <= 0)
    throw InvalidArgumentError("max_new_tokens must be positive, got " + std::to_string(req.max_new_tokens));
  if (req.logprobs < -1 || req.logprobs > kMaxTopLogprobs)
    throw InvalidArgumentError("logprobs must be between 0 and " + std::to_string(kMaxTopLogprobs) +
                               " (or -1: none), got " + std::to_string(req.logprobs));
  const int64_t prompt = static_cast<int64_t>(req.prompt_ids.size());
  if (prompt + req.max_new_tokens > max_context())
    throw InvalidArgumentError("prompt of " + std::to_string(prompt) + " tokens plus max_new_tokens " +
                               std::to_string(req.max_new_tokens) + " exceeds the model's context of " +
                               std::to_string(max_context()) + " tokens");
  const int64_t usable_tokens = cache_->allocator().num_total() * cache_->block_size();
  if (prompt + req.max_new_tokens > usable_tokens)
    throw InvalidArgumentError("prompt of " + std::to_string(prompt) + " tokens plus max_new_tokens " +
                               std::to_string(req.max_new_tokens) + " exceeds the KV cache of " +
                               std::to_string(usable_tokens) + " tokens");
  req.sampling.validate();
  auto s = std::make_unique<Sequence>();
  s->req = std::move(req);
  s->on_event = std::move(on_event);
  s->tokens = s->req.prompt_ids;
  s->prompt_len = prompt;
  if (s->req.stop_token_ids.empty() && !s->req.ignore_eos) s->req.stop_token_ids = eos_ids_;
  s->sampler = std::make_unique<Sampler>(s->req.sampling);
  if (tokenizer_) {
    const Tokenizer* tok = tokenizer_;
    s->detok = std::make_unique<IncrementalDetokenizer>([tok](int32_t id) { return tok->token_bytes(id); },
                                                        [tok](int32_t id) { return tok->is_special(id); },
                                                        s->req.skip_special_tokens);
  }
  s->stop = std::make_unique<StopMatcher>(s->req.stop);
  if (s->req.grammar) {
    if (!tokenizer_)
      throw InvalidArgumentError("a grammar-constrained request needs the model's tokenizer, and this engine has none");
    s->grammar = std::make_unique<GrammarMatcher>(s->req.grammar, grammar_vocabulary(), s->req.stop_token_ids);
  }
  std::lock_guard lock(inbox_mu_);
  if (queued_ >= config_.max_queue)
    throw QueueFullError("the request queue is full (" + std::to_string(config_.max_queue) + " waiting)");
  s->id = next_id_++;
  const uint64_t id = s->id;
  ++queued_;
  inbox_.push_back(std::move(s));
  inbox_cv_.notify_all();
  return id;
}

void LLMEngine::abort(uint64_t request_id) {
  std::lock_guard lock(inbox_mu_);
  aborts_.push_back(request_id);
  inbox_cv_.notify_all();
}

bool LLMEngine::has_work() const {
  std::lock_guard lock(inbox_mu_);
  return !inbox_.empty() || !aborts_.empty() || !waiting_.empty() || !running_.empty();
}

void LLMEngine::wait_for_work(int timeout_ms) const {
  std::unique_lock lock(inbox_mu_);
  inbox_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                     [&] { return !inbox_.empty() || !aborts_.empty() || !waiting_.empty() || !running_.empty(); });
}

void LLMEngine::drain_inbox() {
  std::vector<std::unique_ptr<Sequence>> incoming;
  std::vector<uint64_t> aborts;
  {
    std::lock_guard lock(inbox_mu_);
    incoming.swap(inbox_);
    aborts.swap(aborts_);
  }
  for (auto& s : incoming) {
    waiting_.push_back(s.get());
    all_.push_back(std::move(s));
  }
  for (uint64_t id : aborts) {
    for (auto& s : all_)
      if (s->id == id && !s->done) finish(*s, FinishReason::Aborted);
  }
}

bool LLMEngine::ensure_blocks(Sequence& s, int64_t tokens) {
  const int64_t need = cache_->blocks_for(tokens) - static_cast<int64_t>(s.blocks.size());
  return need <= 0 || cache_->allocator().allocate(need, s.blocks);
}

void LLMEngine::preempt(Sequence& s) {
  // Recompute later: drop the cache, keep the tokens (prompt + generated) and the sampler state.
  cache_->allocator().free(s.blocks);
  s.blocks.clear();
  cache_->state_slots().free(s.state_slot);  // the state is recomputed with the KV cache
  s.state_slot = -1;
  s.computed = 0;
  running_.erase(std::remove(running_.begin(), running_.end(), &s), running_.end());
  waiting_.push_front(&s);
  std::lock_guard lock(stats_mu_);
  ++stats_.preemptions;
}

void LLMEngine::finish(Sequence& s, FinishReason reason) {
  if (s.done) return;
  s.done = true;
  s.finish_reason = reason;
  cache_->allocator().free(s.blocks);
  s.blocks.clear();
  cache_->state_slots().free(s.state_slot);
  s.state_slot = -1;
  running_.erase(std::remove(running_.begin(), running_.end(), &s), running_.end());
  if (auto it = std::find(waiting_.begin(), waiting_.end(), &s); it != waiting_.end()) {
    waiting_.erase(it);
  }
  {
    std::lock_guard lock(inbox_mu_);
    --queued_;
  }
  StreamEvent ev;
  ev.request_id = s.id;
  if (reason != FinishReason::Stop || !s.stop->stopped()) {
    // Release text held back for a possible multi-byte character or stop string.
    std::string tail = s.detok ? s.detok->flush() : std::string();
    auto r = s.stop->push(tail);
    ev.text_delta = r.emit + (r.stopped ? std::string() : s.stop->flush());
  }
  s.text += ev.text_delta;
  take_logprobs(s, ev);
  ev.finished = true;
  ev.finish_reason = reason;
  ev.prompt_tokens = s.prompt_len;
  ev.completion_tokens = s.generated();
  RequestOutput out;
  out.request_id = s.id;
  out.ids.assign(s.tokens.begin() + s.prompt_len, s.tokens.end());
  out.text = s.text;
  out.logprobs = s.logprobs;
  out.prompt_tokens = s.prompt_len;
  out.completion_tokens = s.generated();
  out.finish_reason = reason;
  // Streaming callers get everything through events; only generate()-style callers collect outputs.
  if (s.on_event) {
    ev.output = &out;
    s.on_event(ev);
  } else {
    finished_.push_back(std::move(out));
  }
}

// The logprobs of the tokens whose text an event carries: all not yet sent.
void LLMEngine::take_logprobs(Sequence& s, StreamEvent& ev) {
  ev.logprobs.assign(s.logprobs.begin() + static_cast<std::ptrdiff_t>(s.logprobs_sent), s.logprobs.end());
  s.logprobs_sent = s.logprobs.size();
}

void LLMEngine::emit(Sequence& s, int32_t token) {
  s.tokens.push_back(token);
  StreamEvent ev;
  ev.request_id = s.id;
  ev.token = token;
  const bool is_stop_token =
      std::find(s.req.stop_token_ids.begin(), s.req.stop_token_ids.end(), token) != s.req.stop_token_ids.end();
  bool stopped_by_string = false;
  if (s.detok && !is_stop_token) {
    auto r = s.stop->push(s.detok->push(token));
    ev.text_delta = r.emit;
    stopped_by_string = r.stopped;
  }
  s.text += ev.text_delta;
  if (!ev.text_delta.empty()) take_logprobs(s, ev);
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.generated_tokens_total;
  }
  if (is_stop_token || stopped_by_string) {
    if (s.on_event && !ev.text_delta.empty()) s.on_event(ev);
    finish(s, FinishReason::Stop);
  } else if (s.generated() >= s.req.max_new_tokens) {
    if (s.on_event && !ev.text_delta.empty()) s.on_event(ev);
    finish(s, FinishReason::Length);
  } else if (s.on_event) {
    s.on_event(ev);
  }
}

bool LLMEngine::step() {
  drain_inbox();
  if (waiting_.empty() && running_.empty()) {
    all_.erase(std::remove_if(all_.begin(), all_.end(), [](const auto& q) { return q->done && q->on_event; }),
               all_.end());
    publish_stats(-1);
    return false;
  }
  const auto start = std::chrono::steady_clock::now();

  // 1. Running sequences keep their place; each needs blocks for its next chunk. When the cache is
  //    full, preempt the newest running sequence (possibly the one asking) and retry.
  struct Planned {
    Sequence* seq;
    int64_t chunk;
  };
  std::vector<Planned> plan;
  int64_t budget = config_.max_tokens_per_step;
  std::vector<Sequence*> order = running_;
  for (Sequence* s : order) {
    if (s->done || std::find(running_.begin(), running_.end(), s) == running_.end()) continue;
    const int64_t pending = static_cast<int64_t>(s->tokens.size()) - s->computed;
    const int64_t chunk = std::min({pending, config_.prefill_chunk, budget});
    if (chunk <= 0) continue;
    while (!ensure_blocks(*s, s->computed + chunk)) {
      Sequence* victim = running_.back();
      plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Planned& p) { return p.seq == victim; }),
                 plan.end());
      preempt(*victim);
      if (victim == s) break;
    }
    if (std::find(running_.begin(), running_.end(), s) == running_.end()) continue;
    plan.push_back({s, chunk});
    budget -= chunk;
  }
  // Preemption may have returned budget; recount.
  budget = config_.max_tokens_per_step;
  for (const auto& p : plan) budget -= p.chunk;

  // 2. Admit waiting sequences (preempted ones first) while budget, batch room and blocks last.
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < config_.max_batch) {
    Sequence* s = waiting_.front();
    const int64_t pending = static_cast<int64_t>(s->tokens.size()) - s->computed;
    const int64_t chunk = std::min({pending, config_.prefill_chunk, budget});
    if (cache_->has_state() && s->state_slot < 0 && cache_->state_slots().num_free() == 0) break;  // wait for a slot
    if (!ensure_blocks(*s, s->computed + chunk)) break;
    if (cache_->has_state() && s->state_slot < 0) s->state_slot = cache_->state_slots().allocate();
    waiting_.pop_front();
    running_.push_back(s);
    plan.push_back({s, chunk});
    budget -= chunk;
    if (s->computed == 0 && s->generated() == 0) {
      std::lock_guard lock(stats_mu_);
      stats_.prompt_tokens_total += s->prompt_len;
    }
  }
  if (plan.empty()) {
    if (running_.empty() && !waiting_.empty()) {
      // Nothing can run and nothing will free blocks: cannot happen for validated requests, but never hang.
      Sequence* s = waiting_.front();
      finish(*s, FinishReason::Aborted);
    }
    return true;
  }

  // 3. One forward over every planned chunk.
  std::vector<SequenceStep> steps;
  steps.reserve(plan.size());
  for (const auto& p : plan) {
    steps.push_back(
        SequenceStep{std::span<const int32_t>(p.seq->tokens.data() + p.seq->computed, static_cast<size_t>(p.chunk)),
                     p.seq->computed, p.seq->blocks, false, p.seq->state_slot, p.seq->prompt_len});
  }
  Tensor logits = runner_->forward(steps);
  const int64_t vocab = logits.size(1);
  if (runner_->last_step_replayed()) {
    std::lock_guard lock(stats_mu_);
    ++stats_.graph_steps;
  }

  // 4. Sequences whose chunk reached the end of their tokens sample the next token.
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence& s = *plan[i].seq;
    s.computed += plan[i].chunk;
    if (s.done || s.computed < static_cast<int64_t>(s.tokens.size())) continue;
    const std::span<const float> row(logits.data<float>() + static_cast<int64_t>(i) * vocab,
                                     static_cast<size_t>(vocab));
    const std::span<const int32_t> prompt(s.tokens.data(), static_cast<size_t>(s.prompt_len));
    const std::span<const int32_t> output(s.tokens.data() + s.prompt_len, static_cast<size_t>(s.generated()));
    int32_t token;
    if (s.grammar) {
      // The mask applies to this sequence's copy of its row inside its own sampler, so the other
      // requests of the batch draw exactly what they would alone.
      if (!s.grammar->fill_next_token_mask(s.allowed)) {
        finish(s, FinishReason::Stop);  // complete, nothing may follow, and no stop token to say so
        continue;
      }
      token = s.sampler->sample(row, prompt, output, s.allowed);
      if (!s.grammar->accept_token(token))
        throw Error("grammar matcher rejected token " + std::to_string(token) + " that its own mask allowed");
    } else {
      token = s.sampler->sample(row, prompt, output);
    }
    if (s.req.logprobs >= 0 &&
        std::find(s.req.stop_token_ids.begin(), s.req.stop_token_ids.end(), token) == s.req.stop_token_ids.end())
      s.logprobs.push_back(step_logprobs(row, token, s.req.logprobs));  // of the model's row, before any mask (as vLLM)
    emit(s, token);
  }

  // Finished streaming sequences are dropped here, never while the plan above still points at them.
  all_.erase(std::remove_if(all_.begin(), all_.end(), [](const auto& q) { return q->done && q->on_event; }),
             all_.end());
  publish_stats(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return true;
}

std::shared_ptr<const TokenVocabulary> LLMEngine::grammar_vocabulary() {
  std::lock_guard lock(vocab_mu_);
  if (!grammar_vocab_)
    grammar_vocab_ = TokenVocabulary::from_tokenizer(*tokenizer_, static_cast<size_t>(model_.config().vocab_size));
  return grammar_vocab_;
}

void LLMEngine::publish_stats(double step_ms) {
  std::lock_guard lock(stats_mu_);
  if (step_ms >= 0) {
    ++stats_.steps;
    stats_.last_step_ms = step_ms;
  }
  stats_.running = static_cast<int64_t>(running_.size());
  stats_.waiting = static_cast<int64_t>(waiting_.size());
  stats_.blocks_free = cache_->allocator().num_free();
  stats_.blocks_used = cache_->allocator().num_total() - stats_.blocks_free;
  stats_.state_slots_total = cache_->has_state() ? cache_->state_slots().num_total() : 0;
  stats_.state_slots_used = cache_->has_state() ? stats_.state_slots_total - cache_->state_slots().num_free() : 0;
  stats_.kv_cache_bytes = cache_->bytes();
  stats_.state_bytes = cache_->state_bytes();
}

std::vector<RequestOutput> LLMEngine::generate(std::vector<GenerationRequest> requests) {
  std::vector<uint64_t> ids;
  for (auto& r : requests) ids.push_back(add_request(std::move(r)));
  while (step()) {
  }
  std::vector<RequestOutput> out;
  for (uint64_t id : ids) {
    auto o = take_output(id);
    if (!o) throw Error("request " + std::to_string(id) + " finished without output");
    out.push_back(std::move(*o));
  }
  return out;
}

std::optional<RequestOutput> LLMEngine::take_output(uint64_t request_id) {
  for (auto it = finished_.begin(); it != finished_.end(); ++it) {
    if (it->request_id == request_id) {
      RequestOutput o = std::move(*it);
      finished_.erase(it);
      all_.erase(std::remove_if(all_.begin(), all_.end(), [&](const auto& s) { return s->id == request_id; }),
                 all_.end());
      return o;
    }
  }
  return std::nullopt;
}

EngineStats LLMEngine::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace opchain
