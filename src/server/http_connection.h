#pragma once
// One client connection: reads requests under the limits of HttpLimits, hands each to its route,
// writes the answers in request order, and closes the connection whenever continuing would be
// unsafe. Internal to the HTTP server (http_server.cpp); route handlers see HttpExchange only.
// Every member function except the thread-safe ones named below runs on the connection's strand.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/http_hooks.h"
#include "server/http_limits.h"
#include "server/http_request_parser.h"
#include "server/http_router.h"

namespace opchain::server {

class HttpConnection;

// What every connection shares with the server; outlives all of them.
struct HttpServerState {
  HttpLimits limits;
  HttpRouter router;
  HttpServerHooks hooks;
  boost::asio::thread_pool* handler_pool = nullptr;  // where blocking routes run
  size_t max_blocking_handlers = 0;                  // more at once: 429 without queueing
  std::atomic<size_t> blocking_handlers{0};
  std::atomic<bool> draining{false};  // set once: responses close their connections, idle ones close

  std::mutex mu;  // guards the two maps
  std::unordered_map<HttpConnection*, std::weak_ptr<HttpConnection>> connections;
  std::unordered_map<std::string, size_t> connections_per_client;
};

class ConnectionExchange;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  using Clock = std::chrono::steady_clock;

  // Counts itself in state's connection maps (the creator stores the weak pointer once it has
  // one); the destructor removes it.
  HttpConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServerState> state, std::string client);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Starts serving requests. Thread-safe.
  void start();
  // Answers `status` without reading a request, then closes (connection limits). Thread-safe.
  void refuse(int status, std::string message, std::string code);
  // Closes the connection if it is between requests; otherwise the current response closes it. Thread-safe.
  void drain();
  // Closes at once; a handler still writing sees client_gone(). Thread-safe.
  void close_now();

  // Strand only: sends what the current exchange queued (ConnectionExchange posts this).
  void flush();

 private:
  enum class Phase { Idle, Head, Body, Handling, Closing, Closed };

  void wait_for_request(bool first);
  void read_head();
  void on_head(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void dispatch(const HttpRoute& route);
  // While a blocking handler runs: a client that closes or resets the connection (nginx's "client
  // prematurely closed connection") closes it here, so the handler sees client_gone() and can cancel
  // its work instead of generating for no one.
  void watch_for_disconnect();
  // Answers an error the HTTP layer detected; the connection closes after it unless may_keep_alive
  // (the request was read whole and asked for keep-alive).
  void fail_request(int status, const std::string& message, const std::string& code, bool may_keep_alive = false);
  void begin_exchange(HttpRequest request, bool may_keep_alive);
  void response_done();
  void report(int status);
  void linger_then_close();
  void linger();
  void close();
  // One deadline for the socket operation about to start. Unlike beast::tcp_stream's timeouts, which
  // close the socket, expiry only cancels the operation, so a 408 can still be written.
  void arm_timeout(Clock::duration timeout);
  void disarm_timeout();
  // The error a completed operation reports: timeout when the deadline cancelled it.
  boost::beast::error_code timed(boost::beast::error_code ec) const;

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  bool timed_out_ = false;
  uint64_t timer_generation_ = 0;
  std::shared_ptr<HttpServerState> state_;
  const std::string client_;
  boost::beast::flat_buffer buffer_;
  std::optional<HttpRequestParser> parser_;
  std::shared_ptr<ConnectionExchange> exchange_;
  std::string out_;  // bytes being written
  Phase phase_ = Phase::Idle;
  bool writing_ = false;
  size_t served_ = 0;
  Clock::time_point request_start_, linger_deadline_;
};

}  // namespace opchain::server
