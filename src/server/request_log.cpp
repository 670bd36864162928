#include "server/request_log.h"

namespace opchain::server {

std::string escape_for_log(std::string_view raw, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const bool cut = raw.size() > max_bytes;
  if (cut) raw = raw.substr(0, max_bytes);
  std::string out;
  out.reserve(raw.size());
  for (const char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    // Bytes >= 0x80 too: a lone UTF-8 lead byte or a C1 control (0x9b is CSI) can still steer a terminal.
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace opchain::server
