#pragma once
// One request and its response, as a route handler sees them. A handler answers exactly once:
// respond() with a whole response, or start_stream() + write()... + end_stream() for a chunked one
// (server-sent events). Every member is safe to call from any thread; handlers that wait on the
// engine run on the server's handler threads, never on the threads that drive the sockets.
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace opchain::server {

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual const HttpRequest& request() const = 0;
  // Sends a whole response (Content-Length framing). Later calls are ignored.
  virtual void respond(HttpResponse response) = 0;
  // Sends head's status and headers with chunked framing; head.body is ignored. False once the
  // client is gone.
  virtual bool start_stream(const HttpResponse& head) = 0;
  // Queues one piece of a started stream. Waits while more than max_buffered_response_bytes are
  // unsent (a slow reader), up to the write timeout. False once the client is gone or too slow:
  // the caller should stop producing (and cancel what feeds it).
  virtual bool write(std::string_view data) = 0;
  // Ends a started stream. False once the client is gone.
  virtual bool end_stream() = 0;
  // True once the connection failed or closed; nothing written reaches the client any more.
  virtual bool client_gone() const = 0;
  // Free text appended to this request's log line (e.g. token counts); the last call wins.
  virtual void annotate(std::string note) = 0;
};

}  // namespace opchain::server
