#pragma once
// An OpenAI-compatible HTTP server over one LLMEngine. One engine thread runs the step loop; HTTP
// handler threads tokenize, queue requests and wait on per-request event queues fed by the engine's
// stream callbacks, so every client shares the running batch (continuous batching). The HTTP layer
// beneath (http_server.h) enforces the connection and request limits of ServerOptions::http.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "io/chat_template.h"
#include "io/tokenizer.h"
#include "server/http_limits.h"

namespace opchain::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                           // 0: any free port (start() returns it)
  std::string served_model;                  // the only accepted value of a request's "model"
  std::string api_key;                       // empty: no authentication
  int max_concurrent = 64;                   // generation requests in flight at once; beyond: 429
  double shutdown_timeout_s = 10.0;          // how long shutdown() lets in-flight requests finish
  bool log_requests = true;                  // one line per request on stderr (control bytes escaped)
  HttpLimits http;                           // sizes, timeouts and connection limits of the HTTP layer
  std::vector<std::string> allowed_origins;  // CORS: browser origins allowed to call (server/cors.h); none by default
};

// What the server serves; the engine, tokenizer and template outlive the server.
struct ServedModel {
  LLMEngine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;  // null: /v1/chat/completions answers 400
  GenerationDefaults defaults;                  // default sampling and max_new_tokens
};

class OpenAIServer {
 public:
  OpenAIServer(ServedModel model, ServerOptions options);
  ~OpenAIServer();  // shuts down (aborting what is left) if shutdown() was not called
  OpenAIServer(const OpenAIServer&) = delete;
  OpenAIServer& operator=(const OpenAIServer&) = delete;

  // Binds host:port (Error naming them when that fails), then starts the engine and HTTP threads.
  // Returns the bound port.
  int start();
  // False once the HTTP accept loop stopped on its own (not through shutdown()).
  bool listening() const;
  // Stops accepting connections, lets in-flight requests finish for up to shutdown_timeout_s, aborts
  // the rest (their KV blocks are freed), and joins every thread. Idempotent.
  void shutdown();
  // Makes a shutdown() in progress (or the next one) abort in-flight requests now instead of waiting.
  void hurry();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opchain::server
