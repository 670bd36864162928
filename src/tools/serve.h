#pragma once
// `opchain serve`: the model behind the OpenAI-compatible HTTP API of server/openai_server.h, with
// the process's signal handling: SIGINT/SIGTERM stop accepting connections and let in-flight requests
// finish (up to shutdown_timeout seconds, then they are cancelled); a second signal cancels them at once.
#include <cstdint>
#include <string>
#include <vector>

#include "server/http_limits.h"
#include "tools/model_session.h"

namespace opchain::tools {

struct ServeOptions {
  EngineOptions engine;
  std::string host = "127.0.0.1";
  int port = 8000;                               // 0: any free port, printed at start
  std::string served_model_name;                 // empty: the model directory's name
  std::string api_key;                           // non-empty: required as a Bearer token on /v1 routes
  int64_t max_queue = EngineConfig{}.max_queue;  // unfinished sequences before 429
  int max_concurrent = 64;                       // HTTP generation requests in flight before 429
  double shutdown_timeout = 10.0;                // seconds in-flight requests may run after a signal
  int64_t max_body_mb = 8;
  server::HttpLimits http;                   // every limit but the body size, which is max_body_mb
  bool quiet = false;                        // no per-request log lines
  std::vector<std::string> allowed_origins;  // CORS; "*" for any
};

// Serves until a signal ends it, logging to stderr. Bad options throw InvalidArgumentError.
void run_serve(const ServeOptions& o);

}  // namespace opchain::tools
