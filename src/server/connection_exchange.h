#pragma once
// The HttpExchange of one request on one HttpConnection: a handler (any thread) queues the response
// bytes here, framed (Content-Length or chunked) and capped at max_buffered_response_bytes unsent;
// the connection's strand takes them and writes them. Internal to the HTTP server.
#include <boost/asio/any_io_executor.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "server/http_connection.h"
#include "server/http_exchange.h"

namespace opchain::server {

class ConnectionExchange final : public HttpExchange {
 public:
  // may_keep_alive: the request allows another after it (the head's Connection header also
  // depends on the server draining when the response starts).
  ConnectionExchange(std::weak_ptr<HttpConnection> conn, boost::asio::any_io_executor strand, HttpRequest request,
                     bool may_keep_alive, std::shared_ptr<HttpServerState> state);

  // HttpExchange (any thread)
  const HttpRequest& request() const override { return request_; }
  void respond(HttpResponse response) override;
  bool start_stream(const HttpResponse& head) override;
  bool write(std::string_view data) override;
  bool end_stream() override;
  bool client_gone() const override;
  void annotate(std::string note) override;

  // ---- the connection's side (its strand) ----

  // Moves the queued bytes into `out`; true once the response is complete and all of it was taken.
  bool take(std::string& out);
  // `n` queued bytes reached the socket: room for a waiting writer.
  void on_written(size_t n);
  // The connection closed: writers stop waiting and every later call fails.
  void mark_gone();
  // After the route's handler returned: a handler that never answered gets a 500; a stream it left
  // open is cut (no terminal chunk, so the client sees it incomplete) and the connection closes.
  void handler_returned();
  int status() const;
  // Whether the connection may serve another request after this one (what the head announced).
  bool keep_alive() const;
  std::string note() const;

 private:
  std::string head_for(const HttpResponse& r, bool stream);  // under mu_
  void queue(std::string_view bytes);                        // under mu_
  void kick();                                               // posts the connection's flush

  const std::weak_ptr<HttpConnection> conn_;
  const boost::asio::any_io_executor strand_;
  const HttpRequest request_;
  const bool may_keep_alive_;
  const std::shared_ptr<HttpServerState> state_;

  mutable std::mutex mu_;
  std::condition_variable room_;
  std::string pending_, note_;
  size_t unsent_ = 0;  // queued and not yet written
  int status_ = 0;
  bool head_sent_ = false, chunked_ = false, ended_ = false, broken_ = false, gone_ = false, keep_alive_ = false;
};

}  // namespace opchain::server
