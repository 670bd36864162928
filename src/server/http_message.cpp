#include "server/http_message.h"

#include <strings.h>

namespace opchain::server {

namespace {
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (same_name(n, name)) return v;
  return {};
}

size_t HttpRequest::header_count(std::string_view name) const {
  size_t count = 0;
  for (const auto& [n, v] : headers) count += same_name(n, name) ? 1 : 0;
  return count;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    const int hi = i + 1 < in.size() ? hex_value(in[i + 1]) : -1;
    const int lo = i + 2 < in.size() ? hex_value(in[i + 2]) : -1;
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

}  // namespace opchain::server
