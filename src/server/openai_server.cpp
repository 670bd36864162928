#include "server/openai_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>

#include "server/choice_assembler.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/openai_protocol.h"
#include "server/request_log.h"
#include "server/tokenize_api.h"

namespace opchain::server {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  return std::string(prefix) + buf;
}

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

  void observe(double v) {
    std::lock_guard lock(mu_);
    const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
    ++counts_[i];
    sum_ += v;
    ++count_;
  }

  void render(std::string& out, const char* name, const char* help) const {
    std::lock_guard lock(mu_);
    char buf[160];
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
    int64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += counts_[i];
      std::snprintf(buf, sizeof buf, "%s_bucket{le=\"%g\"} %lld\n", name, bounds_[i],
                    static_cast<long long>(cumulative));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "%s_bucket{le=\"+Inf\"} %lld\n%s_sum %.6f\n%s_count %lld\n", name,
                  static_cast<long long>(count_), name, sum_, name, static_cast<long long>(count_));
    out += buf;
  }

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;
  double sum_ = 0;
  int64_t count_ = 0;
};

const std::vector<double> kLatencyBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
const std::vector<double> kStepBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

// One HTTP generation request: its sequences' events, pushed by engine callbacks (engine thread)
// and taken by the HTTP handler thread that answers the client.
struct Generation {
  struct Event {
    size_t choice = 0;
    std::string text;
    bool finished = false;
    FinishReason reason = FinishReason::None;
    int64_t prompt_tokens = 0, completion_tokens = 0;
    std::vector<StepLogprobs> logprobs;  // of the tokens whose text this event carries
  };

  explicit Generation(size_t choices) : engine_ids(choices, 0) {}

  void push(size_t choice, const StreamEvent& ev) {
    {
      std::lock_guard lock(mu);
      if (!ev.text_delta.empty() && !first_text) first_text = Clock::now();
      if (ev.finished) ++finished_in_engine;
      events.push_back(Event{choice, ev.text_delta, ev.finished, ev.finish_reason, ev.prompt_tokens,
                             ev.completion_tokens, ev.logprobs});
    }
    cv.notify_all();
  }

  void fail(const std::string& message) {
    {
      std::lock_guard lock(mu);
      if (failure.empty()) failure = message;
    }
    cv.notify_all();
  }

  // Waits up to `timeout` for events; empty on timeout. Throws ApiError once the engine failed.
  std::deque<Event> take(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, timeout, [&] { return !events.empty() || !failure.empty(); });
    if (!failure.empty()) throw ApiError(500, "the engine failed while generating: " + failure, "server_error");
    std::deque<Event> out;
    out.swap(events);
    return out;
  }

  void set_engine_id(size_t choice, uint64_t id) {
    std::lock_guard lock(mu);
    engine_ids[choice] = id;
  }
  // The sequences the engine has not finished (ids of sequences never queued are 0 and skipped).
  std::vector<uint64_t> unfinished_ids() {
    std::lock_guard lock(mu);
    if (finished_in_engine >= engine_ids.size()) return {};
    std::vector<uint64_t> ids;
    for (uint64_t id : engine_ids)
      if (id != 0) ids.push_back(id);
    return ids;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;
  std::vector<uint64_t> engine_ids;
  size_t finished_in_engine = 0;
  std::string failure;
  const Clock::time_point start = Clock::now();
  std::optional<Clock::time_point> first_text;
};

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct OpenAIServer::Impl {
  Impl(ServedModel m, ServerOptions o) : model(std::move(m)), opt(std::move(o)) {
    if (!model.engine || !model.tokenizer) throw InvalidArgumentError("OpenAIServer needs an engine and a tokenizer");
    if (opt.max_concurrent <= 0) throw InvalidArgumentError("max_concurrent must be positive");
    limits.served_model = opt.served_model;
    limits.max_context = model.engine->max_context();
    limits.serves_logprobs = limits.serves_echo = true;
    cors = CorsPolicy(opt.allowed_origins);
    if (model.chat_template && !model.chat_template->bos_token().empty())
      bos_id = model.tokenizer->token_to_id(model.chat_template->bos_token());
  }

  // ---- per-request ownership ----

  // Everything one generation request holds: a concurrency slot, its place in the live set (so
  // shutdown and engine failures reach it), and its engine sequences, which are aborted if the
  // request ends before they do (client gone, error), so their KV blocks free at the next step.
  class Flight {
   public:
    Flight(Impl& impl, size_t choices) : impl_(impl), gen(std::make_shared<Generation>(choices)) {
      if (impl_.in_flight.fetch_add(1) >= impl_.opt.max_concurrent) {
        impl_.in_flight.fetch_sub(1);
        throw ApiError(429, "too many concurrent requests (limit " + std::to_string(impl_.opt.max_concurrent) + ")",
                       "rate_limit_error", "", "too_many_requests");
      }
      std::lock_guard lock(impl_.live_mu);
      impl_.live[gen.get()] = gen;
    }
    ~Flight() {
      for (uint64_t id : gen->unfinished_ids()) impl_.model.engine->abort(id);
      {
        std::lock_guard lock(impl_.live_mu);
        impl_.live.erase(gen.get());
      }
      impl_.metrics_prompt_tokens += prompt_tokens;
      impl_.metrics_completion_tokens += completion_tokens;
      {
        std::lock_guard lock(gen->mu);
        if (gen->first_text) impl_.ttft.observe(std::chrono::duration<double>(*gen->first_text - gen->start).count());
      }
      impl_.request_seconds.observe(seconds_since(gen->start));
      impl_.in_flight.fetch_sub(1);
    }
    Flight(const Flight&) = delete;
    Flight& operator=(const Flight&) = delete;

    Impl& impl_;
    std::shared_ptr<Generation> gen;
    int64_t prompt_tokens = 0, completion_tokens = 0;
  };

  // ---- HTTP plumbing ----

  void check_auth(const HttpRequest& req) const {
    if (opt.api_key.empty()) return;
    const std::string_view h = req.header("Authorization");
    const std::string_view prefix = "Bearer ";
    if (h.empty())
      throw ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", "authentication_error", "",
                     "invalid_api_key");
    if (h.substr(0, prefix.size()) != prefix || !constant_time_equal(std::string(h.substr(prefix.size())), opt.api_key))
      throw ApiError(401, "incorrect API key", "authentication_error", "", "invalid_api_key");
  }

  // Route admission (before the body is read): the API key.
  std::optional<HttpResponse> refuse_unauthorized(const HttpRequest& head) const {
    try {
      check_auth(head);
      return std::nullopt;
    } catch (const ApiError& e) {
      return error_response(e);
    }
  }

  static HttpResponse json_response(int status, const nlohmann::json& j) {
    HttpResponse r;
    r.status = status;
    r.body = dump(j);
    return r;
  }

  static HttpResponse error_response(const ApiError& e) { return json_response(e.status(), e.body()); }

  // The log line's token counts ("-" until known).
  static std::string token_note(int64_t prompt_tokens, int64_t completion_tokens) {
    auto count = [](int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); };
    return "prompt_tokens=" + count(prompt_tokens) + " completion_tokens=" + count(completion_tokens);
  }

  // ---- generation ----

  // The request's prompts as ids, and as text (the rendered chat, or the completion prompt: what
  // the reasoning split and echo read).
  struct Prompts {
    std::vector<std::vector<int32_t>> ids;
    std::vector<std::string> texts;
  };

  Prompts tokenize(const ParsedRequest& pr) const {
    Prompts out;
    std::vector<std::vector<int32_t>>& prompts = out.ids;
    if (pr.endpoint == Endpoint::Chat) {
      if (!model.chat_template)
        throw ApiError(400, "this model has no chat template; use /v1/completions with a plain prompt",
                       "invalid_request_error", "messages", "no_chat_template");
      std::string text;
      try {
        text = model.chat_template->render(pr.messages, pr.tools, true, pr.chat_template_kwargs);
      } catch (const InvalidArgumentError& e) {
        throw ApiError(400, std::string("the chat template cannot render these messages: ") + e.what(),
                       "invalid_request_error", "messages");
      }
      // The rendered template holds the control tokens (<|im_start|>, ...): match them as specials.
      prompts.push_back(model.tokenizer->encode(text, true));
      out.texts.push_back(std::move(text));
    } else {
      for (const auto& p : pr.prompts) {
        prompts.push_back(p.is_ids ? p.ids : model.tokenizer->encode(p.text));
        out.texts.push_back(p.is_ids ? model.tokenizer->decode(p.ids, pr.skip_special_tokens) : p.text);
      }
    }
    for (size_t i = 0; i < prompts.size(); ++i)
      if (prompts[i].empty())
        throw ApiError(400, "the prompt encodes to no tokens", "invalid_request_error",
                       pr.endpoint == Endpoint::Chat ? "messages" : "prompt");
    return out;
  }

  // One assembler per choice (choice = prompt * n + sample), reading replies as the request asks.
  std::vector<ChoiceAssembler> assemblers(const ParsedRequest& pr, const Prompts& prompts) const {
    std::vector<ChoiceAssembler> out;
    const std::string source = model.chat_template ? model.chat_template->source() : std::string();
    for (const std::string& text : prompts.texts)
      for (int j = 0; j < pr.n; ++j) out.emplace_back(choice_options(pr, source, text, *model.tokenizer));
    return out;
  }

  int64_t max_new_tokens(const ParsedRequest& pr, int64_t prompt_len) const {
    const int64_t ctx = model.engine->max_context();
    const std::string param = pr.endpoint == Endpoint::Chat ? "messages" : "prompt";
    if (pr.max_tokens) {
      if (prompt_len + *pr.max_tokens > ctx)
        throw ApiError(400,
                       "This model's maximum context length is " + std::to_string(ctx) +
                           " tokens. However, you requested " + std::to_string(prompt_len + *pr.max_tokens) +
                           " tokens (" + std::to_string(prompt_len) + " in the prompt, " +
                           std::to_string(*pr.max_tokens) +
                           " for the completion). Please reduce the prompt or max_tokens.",
                       "invalid_request_error", param, "context_length_exceeded");
      return *pr.max_tokens;
    }
    // No max_tokens: whatever room the context and the KV cache leave (vLLM's default), capped by
    // generation_config's max_new_tokens when the model sets one.
    const EngineStats st = model.engine->stats();
    const int64_t kv_tokens = (st.blocks_used + st.blocks_free) * model.engine->config().block_size;
    const int64_t room = std::min(ctx, kv_tokens) - prompt_len;
    if (room <= 0)
      throw ApiError(400,
                     "This model's maximum context length is " + std::to_string(ctx) + " tokens, but the prompt is " +
                         std::to_string(prompt_len) + " tokens, which leaves no room for a completion.",
                     "invalid_request_error", param, "context_length_exceeded");
    return model.defaults.max_new_tokens > 0 ? std::min(model.defaults.max_new_tokens, room) : room;
  }

  std::shared_ptr<Flight> submit(const ParsedRequest& pr, const std::vector<std::vector<int32_t>>& prompts) {
    const size_t n = static_cast<size_t>(pr.n);
    // Every prompt is checked against the context before any sequence is queued.
    std::vector<int64_t> max_new;
    for (const auto& p : prompts) max_new.push_back(max_new_tokens(pr, static_cast<int64_t>(p.size())));
    auto flight = std::make_shared<Flight>(*this, prompts.size() * n);
    for (const auto& p : prompts) flight->prompt_tokens += static_cast<int64_t>(p.size());
    std::shared_ptr<Generation> gen = flight->gen;
    for (size_t pi = 0; pi < prompts.size(); ++pi) {
      for (size_t j = 0; j < n; ++j) {
        const size_t choice = pi * n + j;
        GenerationRequest r;
        r.prompt_ids = prompts[pi];
        r.sampling = pr.sampling;
        // n samples of one seeded request should differ from each other yet repeat run to run.
        if (r.sampling.seed && j > 0) r.sampling.seed = *r.sampling.seed + j;
        r.max_new_tokens = max_new[pi];
        r.stop = pr.stop;
        r.ignore_eos = pr.ignore_eos;
        r.skip_special_tokens = pr.skip_special_tokens;
        r.logprobs = pr.logprobs;
        r.grammar = pr.grammar;
        try {
          const uint64_t id =
              model.engine->add_request(std::move(r), [gen, choice](const StreamEvent& ev) { gen->push(choice, ev); });
          gen->set_engine_id(choice, id);
        } catch (const QueueFullError& e) {
          // ~Flight aborts the sequences this request already queued.
          throw ApiError(429, std::string(e.what()) + "; retry later", "rate_limit_error", "", "queue_full");
        } catch (const InvalidArgumentError& e) {
          throw ApiError(400, e.what(), "invalid_request_error", pr.endpoint == Endpoint::Chat ? "messages" : "prompt");
        }
      }
    }
    return flight;
  }

  ApiError aborted_error() const {
    if (draining)
      return ApiError(503, "the request was cancelled: the server is shutting down", "server_error", "",
                      "shutting_down");
    return ApiError(500, "the request was cancelled by the engine", "server_error");
  }

  // Waits for every choice, then answers at once. A client that hangs up meanwhile (its SDK timed
  // out, say) closes the connection (HttpConnection watches the socket while a handler runs): the
  // request ends within one take() and ~Flight aborts its sequences, so the KV blocks are free at the
  // next step instead of after a generation nobody reads.
  void answer_whole(Flight& flight, const ParsedRequest& pr, std::vector<ChoiceAssembler>& choices, HttpExchange& ex) {
    const size_t total = flight.gen->engine_ids.size();
    std::vector<FinishReason> reasons(total, FinishReason::None);
    size_t finished = 0;
    while (finished < total) {
      for (auto& ev : flight.gen->take(std::chrono::milliseconds(100))) {
        choices[ev.choice].add(ev.text, ev.logprobs);
        if (!ev.finished) continue;
        ++finished;
        choices[ev.choice].finish();
        reasons[ev.choice] = ev.reason;
        flight.completion_tokens += ev.completion_tokens;
        if (ev.reason == FinishReason::Aborted) throw aborted_error();
      }
      if (finished < total && ex.client_gone()) {  // returning drops the Flight, which aborts the sequences
        cancelled_by_client.fetch_add(1);
        ex.annotate(token_note(flight.prompt_tokens, flight.completion_tokens) + " cancelled=client_gone");
        return;
      }
    }
    std::vector<ChoiceResult> results;
    for (size_t i = 0; i < total; ++i) results.push_back(choices[i].result(reasons[i]));
    const ResponseMeta meta{pr.endpoint, random_id(pr.endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-"), unix_now(),
                            opt.served_model};
    ex.annotate(token_note(flight.prompt_tokens, flight.completion_tokens));
    ex.respond(
        json_response(200, completion_response(meta, results, Usage{flight.prompt_tokens, flight.completion_tokens})));
  }

  // Streams server-sent events until every choice finished or the client is gone (a failed write);
  // the caller's Flight then aborts what is left, so a client that goes away frees its sequences.
  void answer_stream(Flight& flight, const ParsedRequest& pr, std::vector<ChoiceAssembler>& choices, HttpExchange& ex) {
    HttpResponse head;
    head.content_type = "text/event-stream";
    head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    const ResponseMeta meta{pr.endpoint, random_id(pr.endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-"), unix_now(),
                            opt.served_model};
    const bool include_usage = pr.include_usage;
    if (!ex.start_stream(head)) return;
    auto write = [&](const std::string& s) { return ex.write(s); };
    auto end = [&] {
      ex.annotate(token_note(flight.prompt_tokens, flight.completion_tokens));
      ex.end_stream();
    };
    Generation& gen = *flight.gen;
    const size_t total = gen.engine_ids.size();
    if (meta.endpoint == Endpoint::Chat)
      for (size_t i = 0; i < total; ++i)
        if (!write(sse_event(stream_chunk(meta, static_cast<int>(i), "", true, std::nullopt, include_usage)))) return;
    size_t finished = 0;
    auto last_write = Clock::now();
    while (finished < total) {
      if (ex.client_gone()) return;
      std::deque<Generation::Event> events;
      try {
        events = gen.take(std::chrono::milliseconds(500));
      } catch (const ApiError& e) {
        write(sse_event(e.body()));
        write(std::string(kSseDone));
        return end();
      }
      if (events.empty()) {
        // A comment line (ignored by SSE clients) while a request waits in the queue: the
        // only way to learn that its client went away before any token is due.
        if (seconds_since(last_write) >= 1.0) {
          if (!write(": keep-alive\n\n")) return;
          last_write = Clock::now();
        }
        continue;
      }
      // Events that queued up while the client was slow go out as one chunk per choice.
      std::map<size_t, ChunkDelta> pending;
      auto flush = [&](size_t choice) {
        auto it = pending.find(choice);
        if (it == pending.end()) return true;
        const bool ok = write(sse_event(stream_chunk(meta, static_cast<int>(choice), it->second, false, std::nullopt,
                                                     choices[choice].called_tools(), include_usage)));
        pending.erase(it);
        return ok;
      };
      auto hold = [&](size_t choice, ChunkDelta d) {
        if (d.content.empty() && d.reasoning.empty() && d.tool_calls.empty() && d.logprobs.is_null()) return;
        auto [it, fresh] = pending.try_emplace(choice, std::move(d));
        if (!fresh) append_delta(it->second, d);
      };
      for (auto& ev : events) {
        hold(ev.choice, choices[ev.choice].add(ev.text, ev.logprobs));
        if (!ev.finished) continue;
        ++finished;
        hold(ev.choice, choices[ev.choice].finish());
        flight.completion_tokens += ev.completion_tokens;
        if (!flush(ev.choice)) return;
        const std::string last =
            ev.reason == FinishReason::Aborted
                ? sse_event(aborted_error().body())
                : sse_event(stream_chunk(meta, static_cast<int>(ev.choice), ChunkDelta{}, false, ev.reason,
                                         choices[ev.choice].called_tools(), include_usage));
        if (!write(last)) return;
      }
      for (size_t c = 0; c < total; ++c)
        if (!flush(c)) return;
      last_write = Clock::now();
    }
    if (include_usage && !write(sse_event(usage_chunk(meta, Usage{flight.prompt_tokens, flight.completion_tokens}))))
      return;
    if (!write(std::string(kSseDone))) return;
    end();
  }

  void handle_tokenize(HttpExchange& ex) {
    try {
      const TokenizeRequest r = parse_tokenize_request(ex.request().body, opt.http.max_body_bytes);
      ex.respond(json_response(200, tokenize_response(r, *model.tokenizer, bos_id)));
    } catch (const ApiError& e) {
      ex.respond(error_response(e));
    } catch (const Error& e) {
      ex.respond(error_response(ApiError(400, e.what(), "invalid_request_error", "content")));
    }
  }

  void handle_detokenize(HttpExchange& ex) {
    try {
      const std::vector<int32_t> ids = parse_detokenize_request(ex.request().body, model.tokenizer->vocab_size(),
                                                                static_cast<size_t>(model.engine->max_context()));
      ex.respond(json_response(200, detokenize_response(ids, *model.tokenizer)));
    } catch (const ApiError& e) {
      ex.respond(error_response(e));
    }
  }

  // Runs on an HTTP handler thread; the body is read and the API key checked (route admission).
  void handle_generation(HttpExchange& ex, Endpoint ep) {
    try {
      if (draining) throw ApiError(503, "the server is shutting down", "server_error", "", "shutting_down");
      const ParsedRequest pr = parse_request(ex.request().body, ep, model.defaults.sampling, limits);
      const Prompts prompts = tokenize(pr);
      std::vector<ChoiceAssembler> choices = assemblers(pr, prompts);
      std::shared_ptr<Flight> flight = submit(pr, prompts.ids);
      ex.annotate(token_note(flight->prompt_tokens, -1));
      if (pr.stream)
        answer_stream(*flight, pr, choices, ex);
      else
        answer_whole(*flight, pr, choices, ex);
    } catch (const ApiError& e) {
      ex.respond(error_response(e));
    } catch (const InvalidArgumentError& e) {
      ex.respond(error_response(ApiError(400, e.what())));
    } catch (const std::exception& e) {
      ex.respond(error_response(ApiError(500, std::string("internal error: ") + e.what(), "server_error")));
    }
  }

  // ---- metrics ----

  std::string render_metrics() {
    const EngineStats st = model.engine->stats();
    std::string out;
    char buf[256];
    auto metric = [&](const char* name, const char* type, const char* help, double value) {
      std::snprintf(buf, sizeof buf, "# HELP %s %s\n# TYPE %s %s\n%s %.9g\n", name, help, name, type, name, value);
      out += buf;
    };
    out +=
        "# HELP opchain_requests_total HTTP requests answered, by endpoint and status.\n"
        "# TYPE opchain_requests_total counter\n";
    {
      std::lock_guard lock(requests_mu);
      for (const auto& [key, count] : requests_total) {
        std::snprintf(buf, sizeof buf, "opchain_requests_total{endpoint=\"%s\",status=\"%d\"} %lld\n",
                      key.first.c_str(), key.second, static_cast<long long>(count));
        out += buf;
      }
    }
    metric("opchain_prompt_tokens_total", "counter", "Prompt tokens of completed generation requests.",
           static_cast<double>(metrics_prompt_tokens.load()));
    metric("opchain_generation_tokens_total", "counter", "Tokens generated for completed generation requests.",
           static_cast<double>(metrics_completion_tokens.load()));
    metric("opchain_requests_in_flight", "gauge", "Generation requests being served.", in_flight.load());
    metric("opchain_requests_cancelled_total", "counter",
           "Non-streaming generation requests cancelled because the client hung up before the answer.",
           static_cast<double>(cancelled_by_client.load()));
    metric("opchain_http_connections", "gauge", "Open HTTP connections, this /metrics request's included.",
           http ? static_cast<double>(http->open_connections()) : 0.0);
    metric("opchain_queue_depth", "gauge", "Sequences waiting for a place in the running batch.",
           static_cast<double>(st.waiting));
    metric("opchain_running_sequences", "gauge", "Sequences in the running batch.", static_cast<double>(st.running));
    metric("opchain_kv_blocks_used", "gauge", "KV cache blocks held by sequences.",
           static_cast<double>(st.blocks_used));
    metric("opchain_kv_blocks_free", "gauge", "KV cache blocks free.", static_cast<double>(st.blocks_free));
    const double blocks = static_cast<double>(st.blocks_used + st.blocks_free);
    metric("opchain_kv_cache_usage_ratio", "gauge", "Fraction of KV cache blocks in use.",
           blocks > 0 ? static_cast<double>(st.blocks_used) / blocks : 0.0);
    metric("opchain_kv_cache_bytes", "gauge", "Bytes the cache holds: KV blocks and linear-attention state slots.",
           static_cast<double>(st.kv_cache_bytes));
    metric("opchain_state_bytes", "gauge", "Bytes of the linear-attention state pool (hybrid models; 0 otherwise).",
           static_cast<double>(st.state_bytes));
    metric("opchain_state_slots_used", "gauge", "Linear-attention state slots held by sequences (hybrid models).",
           static_cast<double>(st.state_slots_used));
    metric("opchain_state_slots_total", "gauge", "Linear-attention state slots, one per sequence that can run at once.",
           static_cast<double>(st.state_slots_total));
    metric("opchain_preemptions_total", "counter", "Sequences preempted for lack of KV blocks.",
           static_cast<double>(st.preemptions));
    metric("opchain_engine_steps_total", "counter", "Engine steps run.", static_cast<double>(st.steps));
    metric("opchain_engine_last_step_seconds", "gauge", "Duration of the latest engine step.",
           st.last_step_ms / 1000.0);
    step_seconds.render(out, "opchain_engine_step_seconds", "Duration of engine steps that ran a batch.");
    ttft.render(out, "opchain_time_to_first_token_seconds", "From request arrival to its first text.");
    request_seconds.render(out, "opchain_request_duration_seconds", "From request arrival to its last token.");
    return out;
  }

  static std::string endpoint_label(const std::string& path) {
    for (const char* known :
         {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/tokenize", "/detokenize"})
      if (path == known) return known;
    if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{model}";
    return "other";  // arbitrary client paths must not create unbounded label sets
  }

  void log_request(const HttpRequestSummary& r) {
    {
      std::lock_guard lock(requests_mu);
      ++requests_total[{endpoint_label(std::string(r.path)), r.status}];
    }
    if (!opt.log_requests) return;
    // Method and target are client bytes: escaped, so they cannot forge lines or drive a terminal.
    const std::string note = r.note.empty() ? token_note(-1, -1) : r.note;
    std::fprintf(stderr, "%s %s %d %s %.1fms\n", escape_for_log(r.method, 32).c_str(), escape_for_log(r.target).c_str(),
                 r.status, note.c_str(), r.seconds * 1000.0);
  }

  // ---- lifecycle ----

  HttpRouter routes() {
    HttpRouter router;
    auto admit = [this](const HttpRequest& head) { return refuse_unauthorized(head); };
    // Probes need no key, and must answer while every handler thread waits on the engine: inline.
    router.add({"GET", "/health", false, nullptr, [this](HttpExchange& ex) {
                  ex.respond(draining ? json_response(503, {{"status", "shutting down"}})
                                      : json_response(200, {{"status", "ok"}}));
                }});
    router.add({"GET", "/metrics", false, nullptr, [this](HttpExchange& ex) {
                  HttpResponse r;
                  r.content_type = "text/plain; version=0.0.4";
                  r.body = render_metrics();
                  ex.respond(std::move(r));
                }});
    router.add({"GET", "/v1/models", false, admit, [this](HttpExchange& ex) {
                  ex.respond(
                      json_response(200, models_response(opt.served_model, created, model.engine->max_context())));
                }});
    router.add({"GET", "/v1/models/*", false, admit, [this](HttpExchange& ex) {
                  const std::string_view encoded =
                      std::string_view(ex.request().path).substr(std::strlen("/v1/models/"));
                  std::string name;
                  if (!percent_decode(encoded, name) || name != opt.served_model) {
                    const std::string shown = escape_for_log(name.empty() ? encoded : name, 256);
                    ex.respond(error_response(ApiError(404, "The model '" + shown + "' does not exist",
                                                       "invalid_request_error", "model", "model_not_found")));
                    return;
                  }
                  ex.respond(json_response(200, model_object(opt.served_model, created, model.engine->max_context())));
                }});
    router.add({"POST", "/v1/chat/completions", true, admit,
                [this](HttpExchange& ex) { handle_generation(ex, Endpoint::Chat); }});
    router.add({"POST", "/v1/completions", true, admit,
                [this](HttpExchange& ex) { handle_generation(ex, Endpoint::Completion); }});
    router.add({"POST", "/tokenize", true, admit, [this](HttpExchange& ex) { handle_tokenize(ex); }});
    router.add({"POST", "/detokenize", true, admit, [this](HttpExchange& ex) { handle_detokenize(ex); }});
    // CORS preflights carry no credentials: answered before (and without) authentication.
    router.add({"OPTIONS", "/*", false, nullptr, [this](HttpExchange& ex) {
                  const HttpRequest& req = ex.request();
                  const CorsPolicy::Preflight p =
                      cors.preflight(req.header("Origin"), req.header("Access-Control-Request-Method"));
                  HttpResponse r;
                  r.status = p.status;
                  r.content_type.clear();
                  r.headers = p.headers;
                  ex.respond(std::move(r));
                }});
    return router;
  }

  HttpServerHooks hooks() {
    HttpServerHooks h;
    h.error_response = [](int status, const std::string& message, const std::string& code) {
      return json_response(status,
                           error_body(message, status >= 500 ? "server_error" : "invalid_request_error", "", code));
    };
    h.on_request_done = [this](const HttpRequestSummary& r) { log_request(r); };
    h.extra_headers = [this](const HttpRequest& req) { return cors.response_headers(req.header("Origin")); };
    return h;
  }

  void engine_loop() {
    LLMEngine& engine = *model.engine;
    while (!stop_engine) {
      engine.wait_for_work(50);
      const auto t0 = Clock::now();
      try {
        if (engine.step()) step_seconds.observe(seconds_since(t0));
      } catch (const std::exception& e) {
        // The step's sequences are in an unknown state: fail every request in flight (each answers
        // 500) and abort their sequences rather than leave clients waiting forever.
        std::fprintf(stderr, "opchain serve: engine step failed: %s\n", e.what());
        fail_all(e.what());
      }
    }
  }

  std::vector<std::shared_ptr<Generation>> live_generations() {
    std::vector<std::shared_ptr<Generation>> out;
    std::lock_guard lock(live_mu);
    for (auto& [ptr, weak] : live)
      if (auto g = weak.lock()) out.push_back(std::move(g));
    return out;
  }

  void fail_all(const std::string& why) {
    for (auto& g : live_generations()) {
      g->fail(why);
      for (uint64_t id : g->unfinished_ids()) model.engine->abort(id);
    }
  }

  void abort_all() {
    for (auto& g : live_generations())
      for (uint64_t id : g->unfinished_ids()) model.engine->abort(id);
  }

  int start() {
    created = unix_now();
    // Generation requests beyond max_concurrent get their 429 from a handler thread; the margin
    // keeps those answers from queueing behind the requests in flight.
    http = std::make_unique<HttpServer>(opt.http, routes(), hooks(), static_cast<size_t>(opt.max_concurrent) + 8);
    const int port = http->listen(opt.host, opt.port);
    engine_thread = std::thread([this] { engine_loop(); });
    // Two socket threads: they only parse and copy bytes; generation waits on the handler threads.
    http->start(2);
    return port;
  }

  void shutdown() {
    if (shut_down.exchange(true)) return;
    draining = true;
    if (http) http->drain();  // no new connections; idle ones close; every response now closes its connection
    const auto grace = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                          std::clamp(opt.shutdown_timeout_s, 0.0, 86400.0)));
    while (in_flight > 0 && !hurry && Clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (in_flight > 0) {
      std::fprintf(stderr, "opchain serve: cancelling %d request(s) still in flight\n", in_flight.load());
      abort_all();
    }
    if (http) {
      // Cancelled streams still send their error event; then every connection closes.
      http->wait_closed(5.0);
      http->stop();
    }
    stop_engine = true;
    if (engine_thread.joinable()) engine_thread.join();
  }

  ServedModel model;
  ServerOptions opt;
  ProtocolLimits limits;
  CorsPolicy cors;
  std::optional<int32_t> bos_id;  // /tokenize with add_special
  std::unique_ptr<HttpServer> http;
  std::thread engine_thread;
  std::atomic<bool> stop_engine{false}, draining{false}, hurry{false}, shut_down{false};
  std::atomic<int> in_flight{0};
  int64_t created = 0;

  std::mutex live_mu;
  std::unordered_map<Generation*, std::weak_ptr<Generation>> live;

  std::mutex requests_mu;
  std::map<std::pair<std::string, int>, int64_t> requests_total;
  std::atomic<int64_t> metrics_prompt_tokens{0}, metrics_completion_tokens{0};
  std::atomic<int64_t> cancelled_by_client{0};  // whole-response requests whose client hung up
  Histogram ttft{kLatencyBuckets}, request_seconds{kLatencyBuckets}, step_seconds{kStepBuckets};
};

OpenAIServer::OpenAIServer(ServedModel model, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}

OpenAIServer::~OpenAIServer() {
  impl_->hurry = true;
  impl_->shutdown();
}

int OpenAIServer::start() { return impl_->start(); }
bool OpenAIServer::listening() const { return !impl_->http || impl_->http->accepting(); }
void OpenAIServer::shutdown() { impl_->shutdown(); }
void OpenAIServer::hurry() { impl_->hurry = true; }

}  // namespace opchain::server
