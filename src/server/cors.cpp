#include "server/cors.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace opchain::server {

namespace {

constexpr std::string_view kMethods = "GET, POST, OPTIONS";
constexpr std::string_view kHeaders = "Authorization, Content-Type";
constexpr std::string_view kMaxAge = "600";

// scheme "://" host [":" port], nothing after (browsers send exactly this form).
bool looks_like_origin(std::string_view o) {
  const size_t sep = o.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  const std::string_view host = o.substr(sep + 3);
  if (host.empty() || host.find_first_of("/?#@ \t") != std::string_view::npos) return false;
  return std::all_of(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(sep), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> allowed_origins) : allowed_(std::move(allowed_origins)) {
  for (std::string& o : allowed_) {
    if (o == "*") {
      any_ = true;
      continue;
    }
    while (!o.empty() && o.back() == '/') o.pop_back();  // "https://a.example/" as typed means the origin
    if (!looks_like_origin(o))
      throw InvalidArgumentError("--allowed-origins: '" + o +
                                 "' is not an origin (scheme://host[:port], or * for any)");
  }
}

bool CorsPolicy::allows(std::string_view origin) const {
  if (origin.empty()) return false;
  return any_ || std::find(allowed_.begin(), allowed_.end(), origin) != allowed_.end();
}

HeaderList CorsPolicy::response_headers(std::string_view origin) const {
  if (!allows(origin)) return {};
  // The origin echoed (not "*") with Vary, so caches keep one answer per origin.
  return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
}

CorsPolicy::Preflight CorsPolicy::preflight(std::string_view origin, std::string_view request_method) const {
  Preflight p;
  const bool method_ok = request_method == "GET" || request_method == "POST" || request_method == "OPTIONS";
  if (!allows(origin) || !method_ok) {
    p.status = 403;
    return p;
  }
  p.headers.emplace_back("Access-Control-Allow-Methods", std::string(kMethods));
  p.headers.emplace_back("Access-Control-Allow-Headers", std::string(kHeaders));
  p.headers.emplace_back("Access-Control-Max-Age", std::string(kMaxAge));
  return p;
}

}  // namespace opchain::server
