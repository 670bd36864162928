#pragma once
// The limits the HTTP layer enforces on every connection, before any handler sees a request.
// Defaults follow what nginx and Envoy ship with; `opchain serve` exposes each as a flag (README,
// "Serving"). Note [HTTP limits] in http_connection.cpp says which status each one answers.
#include <cstddef>
#include <cstdint>

namespace opchain::server {

struct HttpLimits {
  size_t max_request_line_bytes = 8 * 1024;       // method + target + version; longer: 414
  size_t max_header_bytes = 64 * 1024;            // request line and all header lines together; more: 431
  size_t max_header_count = 100;                  // header lines; more: 431
  size_t max_body_bytes = 8u << 20;               // larger bodies (declared or chunked): 413, connection closed
  double header_timeout_s = 10.0;                 // a head must arrive whole this long after its first byte
                                                  // (and a new connection send that byte); else 408
  double body_timeout_s = 10.0;                   // longest pause between two reads of a body; else 408
  double write_timeout_s = 30.0;                  // longest a response write may stall (slow reader); then closed
  double keep_alive_timeout_s = 15.0;             // an idle keep-alive connection is closed after this
  size_t max_keep_alive_requests = 10000;         // requests on one connection before it is closed
  size_t max_connections = 512;                   // open connections; beyond: 503 and close
  size_t max_connections_per_client = 128;        // open connections from one IP address; beyond: 429 and close
  size_t max_buffered_response_bytes = 1u << 20;  // a stream's unsent bytes before its writer waits
};

}  // namespace opchain::server
