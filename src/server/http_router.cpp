#include "server/http_router.h"

namespace opchain::server {

const HttpRoute* HttpRouter::find(std::string_view method, std::string_view path) const {
  for (const auto& r : routes_) {
    if (r.method != method) continue;
    const std::string_view pattern = r.path;
    if (!pattern.empty() && pattern.back() == '*') {
      const std::string_view prefix = pattern.substr(0, pattern.size() - 1);
      if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix) return &r;
    } else if (path == pattern) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace opchain::server
