#include "tools/serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "server/openai_server.h"

namespace opchain::tools {

namespace {

// Takes SIGINT/SIGTERM on one thread with sigwait. The constructor blocks them first, so every
// thread created afterwards (compute pool, engine, HTTP socket and handler threads) inherits the
// mask: a signal never interrupts a kernel or a socket call, and the shutdown runs as ordinary
// code, not in a handler.
class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGUSR2);  // how the destructor wakes the thread
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] { run(); });
  }
  ~SignalWatcher() {
    stopping_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Before this, a signal exits at once: the model is still loading and nothing is in flight.
  void set_serving() { serving_ = true; }
  // Waits until more than `seen` signals arrived, `done` is set, or `timeout` passes.
  int wait(int seen, const std::atomic<bool>& done, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return count_ > seen || done; });
    return count_;
  }
  // Wakes wait() after its `done` flag changed.
  void notify() {
    std::lock_guard lock(mu_);  // under the lock, or a waiter between its check and its sleep misses it
    cv_.notify_all();
  }

 private:
  void run() {
    for (;;) {
      int sig = 0;
      if (sigwait(&set_, &sig) != 0) continue;
      if (sig == SIGUSR2) {
        if (stopping_) return;
        continue;
      }
      if (!serving_) _exit(128 + sig);
      {
        std::lock_guard lock(mu_);
        ++count_;
      }
      cv_.notify_all();
    }
  }

  sigset_t set_;
  std::atomic<bool> serving_{false}, stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  std::thread thread_;
};

std::string default_served_name(const std::string& model_dir) {
  std::filesystem::path p(model_dir);
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names "dir"
  return p.filename().empty() ? model_dir : p.filename().string();
}

}  // namespace

void run_serve(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) throw InvalidArgumentError("--port must be in [0, 65535]");
  if (o.max_queue <= 0 || o.max_concurrent <= 0 || o.max_body_mb <= 0)
    throw InvalidArgumentError("--max-queue, --max-concurrent-requests and --max-body-mb must be positive");
  if (!(o.shutdown_timeout >= 0 && o.shutdown_timeout <= 86400))
    throw InvalidArgumentError("--shutdown-timeout must be between 0 and 86400 seconds");
  const auto& h = o.http;
  if (h.max_request_line_bytes < 16 || h.max_header_bytes < 64 || h.max_header_count == 0 ||
      h.max_keep_alive_requests == 0 || h.max_connections == 0 || h.max_connections_per_client == 0)
    throw InvalidArgumentError(
        "--max-request-line-bytes (>= 16), --max-header-bytes (>= 64), --max-headers, "
        "--max-keep-alive-requests, --max-connections and --max-connections-per-client must be positive");
  for (const auto& [flag, seconds] : {std::pair{"--header-timeout", h.header_timeout_s},
                                      {"--body-timeout", h.body_timeout_s},
                                      {"--write-timeout", h.write_timeout_s},
                                      {"--keep-alive-timeout", h.keep_alive_timeout_s}})
    if (!(seconds > 0 && seconds <= 86400))
      throw InvalidArgumentError(std::string(flag) + " must be between 0 and 86400 seconds, not " +
                                 std::to_string(seconds));

  // A client that disconnects turns the next write into EPIPE; the default SIGPIPE would kill us.
  signal(SIGPIPE, SIG_IGN);
  SignalWatcher signals;  // before any thread exists; outlives the server

  auto session = open_session(o.engine, true);
  if (session->engine->config().max_queue != o.max_queue) {
    // EngineOptions (shared with generate) has no queue bound; rebuild the engine with this one.
    EngineConfig ec = session->engine->config();
    ec.max_queue = o.max_queue;
    session->engine.reset();  // free its KV cache before the new one is allocated
    session->engine = std::make_unique<LLMEngine>(*session->loaded.model, session->loaded.device, &*session->tokenizer,
                                                  ec, session->defaults.eos_ids);
  }

  server::ServedModel served;
  served.engine = session->engine.get();
  served.tokenizer = &*session->tokenizer;
  served.chat_template = session->chat_template ? &*session->chat_template : nullptr;
  served.defaults = session->defaults;
  server::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  so.served_model = o.served_model_name.empty() ? default_served_name(o.engine.model) : o.served_model_name;
  so.api_key = o.api_key;
  so.max_concurrent = o.max_concurrent;
  so.http = o.http;
  so.http.max_body_bytes = static_cast<size_t>(o.max_body_mb) << 20;
  so.shutdown_timeout_s = o.shutdown_timeout;
  so.log_requests = !o.quiet;
  so.allowed_origins = o.allowed_origins;

  server::OpenAIServer srv(served, so);
  signals.set_serving();  // from here a signal means a graceful shutdown, handled once start() returns
  const int port = srv.start();
  std::fprintf(stderr, "serving '%s' on http://%s:%d (OpenAI API under /v1; /health, /metrics)%s%s\n",
               so.served_model.c_str(), o.host.c_str(), port, so.api_key.empty() ? "" : ", API key required",
               served.chat_template ? "" : "; no chat template, so /v1/chat/completions is unavailable");

  const std::atomic<bool> never{false};
  while (signals.wait(0, never, std::chrono::milliseconds(200)) == 0)
    if (!srv.listening())
      throw Error("the HTTP accept loop on " + o.host + ":" + std::to_string(port) + " stopped unexpectedly");
  std::fprintf(
      stderr,
      "shutting down: no new connections; waiting up to %g s for requests in flight (signal again to cancel them)\n",
      o.shutdown_timeout);
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    srv.shutdown();
    done = true;
    signals.notify();
  });
  while (!done) {
    if (signals.wait(1, done, std::chrono::milliseconds(200)) > 1) {
      srv.hurry();
      break;
    }
  }
  stopper.join();
  std::fprintf(stderr, "stopped\n");
}

}  // namespace opchain::tools
