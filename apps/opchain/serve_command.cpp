// `opchain serve`: its flags; the server and its signal handling are tools/serve.h.
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/serve.h"

namespace opchain::cli {

Runner add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  auto o = std::make_shared<tools::ServeOptions>();
  add_engine_flags(cmd, o->engine);
  cmd->add_option("--host", o->host, "address to listen on");
  cmd->add_option("--port", o->port, "TCP port (0: any free port, printed at start)");
  cmd->add_option("--served-model-name", o->served_model_name,
                  "model name clients send (default: the model directory's name)");
  cmd->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on /v1 routes")
      ->envname("OPCHAIN_API_KEY");
  cmd->add_option("--max-queue", o->max_queue, "unfinished sequences the engine holds before answering 429");
  cmd->add_option("--max-concurrent-requests", o->max_concurrent,
                  "HTTP generation requests in flight before answering 429");
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout, "seconds in-flight requests may run after SIGINT/SIGTERM");
  cmd->add_option("--max-body-mb", o->max_body_mb, "largest request body in MiB (larger: 413)");
  cmd->add_flag("--quiet", o->quiet, "no per-request log lines");
  cmd->add_option(
         "--allowed-origins", o->allowed_origins,
         "browser origins allowed to call the API (CORS), e.g. https://app.example.com, or * for any (default: none)")
      ->delimiter(',');
  // HTTP limits (README, "Serving"); the defaults are HttpLimits'.
  auto& h = o->http;
  cmd->add_option("--max-request-line-bytes", h.max_request_line_bytes, "longest request line (longer: 414)")
      ->capture_default_str();
  cmd->add_option("--max-header-bytes", h.max_header_bytes, "largest request head, request line included (larger: 431)")
      ->capture_default_str();
  cmd->add_option("--max-headers", h.max_header_count, "most header lines in a request (more: 431)")
      ->capture_default_str();
  cmd->add_option("--header-timeout", h.header_timeout_s, "seconds a request head may take to arrive (then 408)")
      ->capture_default_str();
  cmd->add_option("--body-timeout", h.body_timeout_s, "longest pause in seconds while a body arrives (then 408)")
      ->capture_default_str();
  cmd->add_option("--write-timeout", h.write_timeout_s,
                  "seconds a response write may stall on a slow reader before the connection closes")
      ->capture_default_str();
  cmd->add_option("--keep-alive-timeout", h.keep_alive_timeout_s, "seconds an idle keep-alive connection stays open")
      ->capture_default_str();
  cmd->add_option("--max-keep-alive-requests", h.max_keep_alive_requests, "requests on one connection before it closes")
      ->capture_default_str();
  cmd->add_option("--max-connections", h.max_connections, "open connections (more: 503)")->capture_default_str();
  cmd->add_option("--max-connections-per-client", h.max_connections_per_client,
                  "open connections from one IP address (more: 429)")
      ->capture_default_str();
  return [o] {
    tools::run_serve(*o);
    return 0;
  };
}

}  // namespace opchain::cli
