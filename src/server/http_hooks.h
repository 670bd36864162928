#pragma once
// What the HTTP server asks of the application beyond its routes: the body of the errors it answers
// itself, and a report of every request (logging, metrics).
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http_message.h"

namespace opchain::server {

// What the HTTP layer reports once per answered (or abandoned) request.
struct HttpRequestSummary {
  std::string_view method, target, path;  // raw client bytes ("-" when the request line never arrived)
  int status = 0;                         // 499: the connection closed before the response was written whole
  double seconds = 0;
  std::string note;  // HttpExchange::annotate's text
};

struct HttpServerHooks {
  // Builds the response for an error the HTTP layer answers itself (400, 404, 408, 413, 414, 431, ...).
  std::function<HttpResponse(int status, const std::string& message, const std::string& code)> error_response;
  // Called once per request on a socket thread (must not block): logging and metrics.
  std::function<void(const HttpRequestSummary&)> on_request_done;
  // Optional: headers added to every response to this request (e.g. CORS), errors included.
  std::function<std::vector<std::pair<std::string, std::string>>(const HttpRequest&)> extra_headers;
};

}  // namespace opchain::server
