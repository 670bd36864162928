#pragma once
// Request-log lines carry client-chosen bytes (the target, the method). Written raw, a "\n" forges
// a log line and an ESC drives the operator's terminal; escape_for_log makes them inert.
#include <string>
#include <string_view>

namespace opchain::server {

// Control bytes, DEL, bytes >= 0x80, '"' and '\\' as \xHH; at most max_bytes of input, then "...".
std::string escape_for_log(std::string_view raw, size_t max_bytes = 1024);

}  // namespace opchain::server
