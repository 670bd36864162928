#pragma once
// An HTTP/1.1 server on Boost.Beast + Asio that enforces HttpLimits on every connection (see
// Note [HTTP limits] in http_connection.cpp). A few socket threads drive every connection
// asynchronously, so slow or idle clients hold no thread; routes marked blocking run on a separate
// pool of handler threads. Beast and Asio stay behind the pimpl.
#include <memory>
#include <string>

#include "server/http_hooks.h"
#include "server/http_limits.h"
#include "server/http_router.h"

namespace opchain::server {

class HttpServer {
 public:
  // handler_threads: blocking routes running at once; more get 429 at once rather than queueing.
  HttpServer(HttpLimits limits, HttpRouter router, HttpServerHooks hooks, size_t handler_threads);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (Error naming host:port when that fails); port 0 picks a free one. Returns the port.
  int listen(const std::string& host, int port);
  // Starts accepting on `io_threads` socket threads.
  void start(size_t io_threads);
  // False once the accept loop stopped on its own (not through drain()).
  bool accepting() const;
  // Connections open now (refused ones included while their answer is sent). Thread-safe.
  size_t open_connections() const;
  // Stops accepting, closes connections that are between requests, and makes every response from
  // now on close its connection. Thread-safe; idempotent.
  void drain();
  // Waits up to timeout_s for every connection to close; true if they did.
  bool wait_closed(double timeout_s);
  // Closes every connection, waits for the handler threads, stops the socket threads. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opchain::server
