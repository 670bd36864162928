#pragma once
// Maps a request's method and path to a route. Each route says where its handler runs and what it
// checks before the body is read (authentication), so a refused client never gets to send one.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/http_exchange.h"
#include "server/http_message.h"

namespace opchain::server {

struct HttpRoute {
  std::string method;  // "GET", "POST"
  std::string path;    // exact; a trailing '*' matches any rest of the path ("/v1/models/*")
  // Where handle() runs. false: on the socket threads, so it must answer at once and never wait
  // (health, metrics). true: on a handler thread, where it may wait on the engine.
  bool blocking = false;
  // Optional. Sees the head only (empty body); a response it returns is sent instead of reading the
  // body and calling handle(), and the connection is then closed.
  std::function<std::optional<HttpResponse>(const HttpRequest& head)> admit;
  std::function<void(HttpExchange&)> handle;
};

class HttpRouter {
 public:
  void add(HttpRoute route) { routes_.push_back(std::move(route)); }
  // The first route matching method and path, or null.
  const HttpRoute* find(std::string_view method, std::string_view path) const;

 private:
  std::vector<HttpRoute> routes_;
};

}  // namespace opchain::server
