// The public API (include/opchain/opchain.h) over the engine: a thin layer that reads the model
// directory once (Note [Model directory]), keeps one LLMEngine, and turns the engine's types and
// errors into the public ones.
#include "opchain/opchain.h"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/model_directory.h"
#include "io/tokenizer.h"

namespace opchain::api {

Error::~Error() = default;

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::None:
      return "none";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
  }
  return "none";
}

namespace {

// Every public entry point runs its body through here, so nothing but api::Error leaves the library.
template <class Fn>
auto translated(Fn&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const api::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw api::Error(e.what());
  }
}

FinishReason finish_reason_of(opchain::FinishReason r) {
  switch (r) {
    case opchain::FinishReason::None:
      return FinishReason::None;
    case opchain::FinishReason::Stop:
      return FinishReason::Stop;
    case opchain::FinishReason::Length:
      return FinishReason::Length;
    case opchain::FinishReason::Aborted:
      return FinishReason::Cancelled;
  }
  return FinishReason::None;
}

Output output_of(const RequestOutput& r) {
  Output o;
  o.request_id = r.request_id;
  o.text = r.text;
  o.token_ids = r.ids;
  o.prompt_tokens = r.prompt_tokens;
  o.finish_reason = finish_reason_of(r.finish_reason);
  return o;
}

}  // namespace

struct LLM::Impl {
  // A submitted request until its output is taken by wait().
  struct Record {
    PieceCallback on_piece;
    bool done = false;  // guarded by records_mu
    Output output;      // set when done
  };

  LoadedModel loaded;
  std::optional<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;
  GenerationDefaults defaults;
  std::unique_ptr<LLMEngine> engine;

  std::mutex step_mu;  // one step at a time (LLMEngine::step runs on one thread)
  std::mutex records_mu;
  std::map<uint64_t, std::shared_ptr<Record>> records;

  const Tokenizer& need_tokenizer() const {
    if (!tokenizer)
      throw InvalidArgumentError("no " + std::string(model_file::kTokenizer) + " in " + loaded.dir +
                                 " (needed for text)");
    return *tokenizer;
  }

  GenerationRequest request_for(std::vector<int32_t> prompt_ids, const SamplingParams& p) const {
    GenerationRequest r;
    r.prompt_ids = std::move(prompt_ids);
    r.sampling = defaults.sampling;
    if (p.temperature) r.sampling.temperature = *p.temperature;
    if (p.top_p) r.sampling.top_p = *p.top_p;
    if (p.top_k) r.sampling.top_k = *p.top_k;
    if (p.min_p) r.sampling.min_p = *p.min_p;
    if (p.repetition_penalty) r.sampling.repetition_penalty = *p.repetition_penalty;
    if (p.presence_penalty) r.sampling.presence_penalty = *p.presence_penalty;
    if (p.frequency_penalty) r.sampling.frequency_penalty = *p.frequency_penalty;
    if (p.seed) r.sampling.seed = *p.seed;
    r.max_new_tokens = p.max_tokens > 0 ? p.max_tokens : defaults.max_new_tokens > 0 ? defaults.max_new_tokens : 256;
    r.stop = p.stop;
    r.ignore_eos = p.ignore_eos;
    r.skip_special_tokens = p.skip_special_tokens;
    return r;
  }

  uint64_t submit(std::vector<int32_t> prompt_ids, const SamplingParams& p, PieceCallback on_piece) {
    auto record = std::make_shared<Record>();
    record->on_piece = std::move(on_piece);
    // Every request streams into its record (the engine hands the finished output to the last event),
    // so outputs are collected the same way whether or not the caller watches the pieces.
    auto on_event = [this, record](const StreamEvent& ev) {
      if (record->on_piece) {
        Piece piece;
        piece.request_id = ev.request_id;
        piece.token = ev.token;
        piece.text = ev.text_delta;
        piece.finished = ev.finished;
        piece.finish_reason = finish_reason_of(ev.finish_reason);
        record->on_piece(piece);
      }
      if (ev.finished && ev.output) {
        std::lock_guard lock(records_mu);
        record->output = output_of(*ev.output);
        record->done = true;
      }
    };
    const uint64_t id = engine->add_request(request_for(std::move(prompt_ids), p), std::move(on_event));
    std::lock_guard lock(records_mu);
    records.emplace(id, std::move(record));
    return id;
  }

  bool step() {
    std::lock_guard lock(step_mu);
    return engine->step();
  }

  // Cancels a request and drops its record (its output will not be asked for).
  void forget(uint64_t id) {
    engine->abort(id);
    std::lock_guard lock(records_mu);
    records.erase(id);
  }

  // The output if the request is done (and forgets it); throws for an id never submitted.
  std::optional<Output> take_if_done(uint64_t id) {
    std::lock_guard lock(records_mu);
    const auto it = records.find(id);
    if (it == records.end())
      throw InvalidArgumentError("no request " + std::to_string(id) + " is waiting (unknown, or its output was taken)");
    if (!it->second->done) return std::nullopt;
    Output out = std::move(it->second->output);
    records.erase(it);
    return out;
  }

  Output wait(uint64_t id) {
    for (;;) {
      if (auto out = take_if_done(id)) return std::move(*out);
      if (!step()) {
        // Idle: another thread's step may have just finished it; otherwise it never will.
        if (auto out = take_if_done(id)) return std::move(*out);
        throw opchain::Error("request " + std::to_string(id) + " is not running");
      }
    }
  }
};

LLM::LLM(const std::string& model_dir, const ModelOptions& options) : impl_(std::make_unique<Impl>()) {
  translated([&] {
    const auto precision = parse_precision_choice(options.precision);
    if (!precision)
      throw InvalidArgumentError("unknown precision '" + options.precision +
                                 "' (expected auto, f32, bf16, quantized or int8)");
    if (options.threads < 0) throw InvalidArgumentError("threads must be 0 (all cores) or more");
    if (options.threads > 0) ThreadPool::set_global_threads(options.threads);
    Impl& m = *impl_;
    const ModelDirectory dir = ModelDirectory::read(model_dir);
    m.loaded = load_model(dir, options.vendor, {}, *precision);
    if (dir.tokenizer.exists()) m.tokenizer = Tokenizer::from_model_directory(dir);
    try {
      m.chat_template = ChatTemplate::from_model_directory(dir);
    } catch (const FormatError&) {
      m.chat_template.reset();  // no template: apply_chat_template says so when asked
    }
    m.defaults = load_generation_defaults(dir, m.loaded.config.eos_token_ids);
    EngineConfig ec;
    ec.block_size = options.block_size;
    ec.kv_cache_bytes = static_cast<size_t>(std::max<int64_t>(options.kv_cache_mb, 0)) << 20;
    ec.max_batch = options.max_batch;
    ec.max_tokens_per_step = options.max_tokens_per_step;
    ec.prefill_chunk = options.prefill_chunk;
    ec.graph = options.graph;
    m.engine = std::make_unique<LLMEngine>(*m.loaded.model, m.loaded.device, m.tokenizer ? &*m.tokenizer : nullptr, ec,
                                           m.defaults.eos_ids);
  });
}

LLM::~LLM() = default;
LLM::LLM(LLM&&) noexcept = default;
LLM& LLM::operator=(LLM&&) noexcept = default;

ModelInfo LLM::info() const {
  return translated([&] {
    const auto& c = impl_->loaded.config;
    ModelInfo i;
    i.architecture = c.architecture;
    i.vocab_size = c.vocab_size;
    i.num_layers = c.num_hidden_layers;
    i.parameters = impl_->loaded.model->parameter_count();
    i.max_context = impl_->engine->max_context();
    i.matmul_precision = std::string(matmul_precision_name(impl_->loaded.device.matmul_precision));
    i.has_tokenizer = impl_->tokenizer.has_value();
    i.has_chat_template = impl_->chat_template.has_value();
    return i;
  });
}

std::vector<int32_t> LLM::tokenize(const std::string& text) const {
  return translated([&] { return impl_->need_tokenizer().encode(text); });
}

std::string LLM::detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  return translated([&] { return impl_->need_tokenizer().decode(ids, skip_special_tokens); });
}

std::string LLM::apply_chat_template(const std::vector<Message>& messages, bool add_generation_prompt,
                                     std::optional<bool> enable_thinking) const {
  return translated([&] {
    if (!impl_->chat_template) throw FormatError(impl_->loaded.dir + " has no chat template");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Message& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    if (enable_thinking) extra["enable_thinking"] = *enable_thinking;
    return impl_->chat_template->render(list, nlohmann::ordered_json(), add_generation_prompt, extra);
  });
}

Output LLM::generate(const std::string& prompt, const SamplingParams& params, const PieceCallback& on_piece) {
  return translated([&] { return impl_->wait(submit(prompt, params, on_piece)); });
}

Output LLM::generate_ids(const std::vector<int32_t>& prompt_ids, const SamplingParams& params,
                         const PieceCallback& on_piece) {
  return translated([&] { return impl_->wait(submit_ids(prompt_ids, params, on_piece)); });
}

std::vector<Output> LLM::generate_batch(const std::vector<std::string>& prompts, const SamplingParams& params) {
  return translated([&] {
    std::vector<uint64_t> ids;
    try {
      for (const auto& p : prompts) ids.push_back(submit(p, params));
    } catch (...) {
      for (uint64_t id : ids) impl_->forget(id);  // all or nothing
      throw;
    }
    std::vector<Output> outputs;
    for (uint64_t id : ids) outputs.push_back(impl_->wait(id));
    return outputs;
  });
}

uint64_t LLM::submit(const std::string& prompt, const SamplingParams& params, PieceCallback on_piece) {
  return translated([&] { return impl_->submit(impl_->need_tokenizer().encode(prompt), params, std::move(on_piece)); });
}

uint64_t LLM::submit_ids(const std::vector<int32_t>& prompt_ids, const SamplingParams& params, PieceCallback on_piece) {
  return translated([&] { return impl_->submit(prompt_ids, params, std::move(on_piece)); });
}

bool LLM::step() {
  return translated([&] { return impl_->step(); });
}

void LLM::run() {
  translated([&] {
    while (impl_->step()) {
    }
  });
}

Output LLM::wait(uint64_t request_id) {
  return translated([&] { return impl_->wait(request_id); });
}

void LLM::cancel(uint64_t request_id) {
  translated([&] { impl_->engine->abort(request_id); });
}

Metrics LLM::metrics() const {
  return translated([&] {
    const EngineStats s = impl_->engine->stats();
    Metrics m;
    m.running = s.running;
    m.waiting = s.waiting;
    m.steps = s.steps;
    m.prompt_tokens = s.prompt_tokens_total;
    m.generated_tokens = s.generated_tokens_total;
    m.preemptions = s.preemptions;
    m.kv_blocks_used = s.blocks_used;
    m.kv_blocks_total = s.blocks_used + s.blocks_free;
    m.kv_cache_bytes = s.kv_cache_bytes;
    m.last_step_ms = s.last_step_ms;
    return m;
  });
}

}  // namespace opchain::api
