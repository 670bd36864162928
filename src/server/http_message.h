#pragma once
// The request and response a route handler sees: plain values, no transport types, so the OpenAI
// handlers do not depend on the HTTP implementation beneath them.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace opchain::server {

struct HttpRequest {
  std::string method;                                        // as sent: "GET", "POST"
  std::string target;                                        // as sent, query and percent-escapes included
  std::string path;                                          // target up to '?', still percent-encoded
  int version = 11;                                          // 10 or 11
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order, names as sent
  std::string body;  // empty until the body was read (admission checks see the head only)

  // The first header of that name (case-insensitive), or "" when there is none.
  std::string_view header(std::string_view name) const;
  // How many headers have that name (case-insensitive).
  size_t header_count(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers; framing ones are the server's
  std::string body;                                          // ignored when the response starts a stream
};

// Percent-decodes a path segment into `out`; false when an escape is malformed ("%4", "%zz").
bool percent_decode(std::string_view in, std::string& out);

}  // namespace opchain::server
