#pragma once
// Cross-origin access for browser pages (`opchain serve --allowed-origins`): none by default. An
// allowed Origin gets Access-Control-Allow-Origin on every answer, and its preflight (OPTIONS with
// Access-Control-Request-Method) gets 204 with the methods and headers the API uses; another origin's
// preflight gets 403 and no CORS headers, so the browser blocks the call. Preflights carry no
// credentials, so they are answered before authentication, as browsers require.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace opchain::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  CorsPolicy() = default;
  // Origins as browsers send them ("https://app.example.com", scheme://host[:port]), or "*" for any.
  // Throws InvalidArgumentError for an entry that is not an origin.
  explicit CorsPolicy(std::vector<std::string> allowed_origins);

  bool enabled() const { return !allowed_.empty(); }
  bool allows(std::string_view origin) const;
  // Headers for an ordinary answer to a request carrying `origin` (none when it is not allowed).
  HeaderList response_headers(std::string_view origin) const;

  struct Preflight {
    int status = 204;
    HeaderList headers;
  };
  // An OPTIONS request; `request_method` is Access-Control-Request-Method. The headers are the
  // preflight's own: response_headers() go on it as on every answer.
  Preflight preflight(std::string_view origin, std::string_view request_method) const;

 private:
  std::vector<std::string> allowed_;
  bool any_ = false;
};

}  // namespace opchain::server
