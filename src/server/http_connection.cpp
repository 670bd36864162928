#include "server/http_connection.h"

#include <strings.h>
#include <sys/socket.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include "server/connection_exchange.h"
#include "server/request_log.h"

// Note [HTTP limits]
// Every limit answers the status nginx and Envoy answer for it, and every error that leaves the
// request stream in doubt closes the connection: after a 400, 408, 413, 414, 431 or 501 nothing
// more is parsed from that connection, so the unread rest of a refused request can never be taken
// for the next request (request smuggling). Closing is "lingering": our side shuts down writing,
// then input is read and discarded for a short while, so the client reads our error instead of a
// reset caused by the bytes it was still sending.
//   request line > max_request_line_bytes                  414
//   head > max_header_bytes, or > max_header_count lines    431
//   body > max_body_bytes (declared or while reading)       413
//   head not complete within header_timeout_s               408
//   body stalls for body_timeout_s                          408
//   malformed framing (conflicting Content-Length, a header
//   line without ':' or with space before it, bad chunks)   400
//   Transfer-Encoding other than "chunked"                  501
//   HTTP/1.1 without exactly one Host                       400
// Connections idle for keep_alive_timeout_s, and those whose reader stalls a write for
// write_timeout_s, are closed without an answer.

namespace opchain::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

using Seconds = std::chrono::duration<double>;

// "2.5 s", not std::to_string's "2.500000".
std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
}

std::chrono::steady_clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(std::clamp(seconds, 0.001, 86400.0)));
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Beast reports any version but 1.x as malformed; a well-formed request line of another version
// ("GET / HTTP/2.0") deserves 505 instead of 400.
bool well_formed_other_version(const beast::flat_buffer& buffer) {
  const std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
  const size_t eol = data.find("\r\n");
  if (eol == std::string_view::npos || eol < 9) return false;
  const std::string_view v = data.substr(eol - 8, 8);  // "HTTP/d.d"
  return v.substr(0, 5) == "HTTP/" && std::isdigit(static_cast<unsigned char>(v[5])) && v[6] == '.' &&
         std::isdigit(static_cast<unsigned char>(v[7])) && data[eol - 9] == ' ';
}

// Lingering close (Note [HTTP limits]): how long input is drained after our last byte.
constexpr auto kLingerTotal = std::chrono::seconds(3);
constexpr auto kLingerRead = std::chrono::seconds(1);
// Bytes read at a time between requests (the head parser asks for more as it needs it).
constexpr size_t kReadChunk = 16 * 1024;

}  // namespace

HttpConnection::HttpConnection(net::ip::tcp::socket socket, std::shared_ptr<HttpServerState> state, std::string client)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      state_(std::move(state)),
      client_(std::move(client)),
      buffer_(std::max(state_->limits.max_header_bytes, size_t{64 * 1024}) + kReadChunk),
      request_start_(Clock::now()) {
  std::lock_guard lock(state_->mu);
  state_->connections.emplace(this, std::weak_ptr<HttpConnection>());
  ++state_->connections_per_client[client_];
}

HttpConnection::~HttpConnection() {
  std::lock_guard lock(state_->mu);
  state_->connections.erase(this);
  auto it = state_->connections_per_client.find(client_);
  if (it != state_->connections_per_client.end() && --it->second == 0) state_->connections_per_client.erase(it);
}

void HttpConnection::start() {
  net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->wait_for_request(true); });
}

void HttpConnection::refuse(int status, std::string message, std::string code) {
  net::dispatch(socket_.get_executor(), [self = shared_from_this(), status, message = std::move(message),
                                         code = std::move(code)] { self->fail_request(status, message, code); });
}

void HttpConnection::drain() {
  net::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::Idle) self->close();
  });
}

void HttpConnection::close_now() {
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

// ---- reading ----

void HttpConnection::wait_for_request(bool first) {
  phase_ = Phase::Idle;
  if (buffer_.size() > 0) return read_head();  // a pipelined request is already here
  if (state_->draining) return close();
  // The first request gets the head timeout from the connection's start, later ones the idle one.
  const auto& lim = state_->limits;
  arm_timeout(to_duration(first ? lim.header_timeout_s : lim.keep_alive_timeout_s));
  socket_.async_read_some(buffer_.prepare(kReadChunk), [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->buffer_.commit(n);
    if (ec) return self->close();  // idle timeout, client closed, or drained: nothing to answer
    self->read_head();
  });
}

void HttpConnection::read_head() {
  phase_ = Phase::Head;
  request_start_ = Clock::now();
  parser_.emplace(state_->limits);
  arm_timeout(to_duration(state_->limits.header_timeout_s));
  http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->on_head(self->timed(ec));
  });
}

void HttpConnection::on_head(beast::error_code ec) {
  const auto& lim = state_->limits;
  if (ec) {
    if (phase_ == Phase::Closed) return;
    if (ec == beast::error::timeout)
      return fail_request(408, "the request head did not arrive within " + seconds_text(lim.header_timeout_s),
                          "request_timeout");
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return close();  // the client went away mid-head: no one to answer
    if (parser_->request_line_too_long() || (ec == http::error::header_limit && !parser_->request_line_seen()))
      return fail_request(414,
                          "the request line is longer than " + std::to_string(lim.max_request_line_bytes) + " bytes",
                          "uri_too_long");
    if (parser_->too_many_headers())
      return fail_request(431, "the request has more than " + std::to_string(lim.max_header_count) + " header lines",
                          "request_header_fields_too_large");
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
      return fail_request(431, "the request head is larger than " + std::to_string(lim.max_header_bytes) + " bytes",
                          "request_header_fields_too_large");
    if (ec == http::error::body_limit)
      return fail_request(413, "the request body is larger than " + std::to_string(lim.max_body_bytes) + " bytes",
                          "request_too_large");
    if (ec == http::error::bad_version && well_formed_other_version(buffer_))
      return fail_request(505, "only HTTP/1.0 and HTTP/1.1 are served", "http_version_not_supported");
    return fail_request(400, "malformed HTTP request: " + ec.message(), "bad_request");
  }

  const HttpRequest& req = parser_->request();
  if (req.version != 10 && req.version != 11)
    return fail_request(505, "only HTTP/1.0 and HTTP/1.1 are served", "http_version_not_supported");
  const size_t hosts = req.header_count("Host");
  if (hosts > 1 || (req.version == 11 && hosts == 0))
    return fail_request(400, "an HTTP/1.1 request needs exactly one Host header", "bad_request");
  if (req.header_count("Transfer-Encoding") > 0) {
    if (req.version == 10) return fail_request(400, "HTTP/1.0 has no Transfer-Encoding", "bad_request");
    if (req.header_count("Transfer-Encoding") > 1 || !iequals(trim(req.header("Transfer-Encoding")), "chunked"))
      return fail_request(501, "only the chunked transfer coding is supported", "not_implemented");
  }

  // Refused before its body is read: the connection can carry another request only if there is
  // no body left unread.
  const bool bodiless = parser_->is_done() && parser_->keep_alive();
  const HttpRoute* route = state_->router.find(req.method, req.path);
  if (!route)
    return fail_request(404, "no route for " + escape_for_log(req.method, 32) + " " + escape_for_log(req.path, 256),
                        "not_found", bodiless);
  if (route->admit) {
    if (std::optional<HttpResponse> refusal = route->admit(req)) {
      begin_exchange(std::move(parser_->request()), bodiless);
      parser_.reset();
      exchange_->respond(std::move(*refusal));
      return;
    }
  }
  if (parser_->content_length() && *parser_->content_length() > lim.max_body_bytes)
    return fail_request(413, "the request body is larger than " + std::to_string(lim.max_body_bytes) + " bytes",
                        "request_too_large");
  if (parser_->is_done()) return dispatch(*route);

  const std::string_view expect = req.header("Expect");
  if (!expect.empty()) {
    if (!iequals(trim(expect), "100-continue") || req.version < 11)
      return fail_request(417, "only 'Expect: 100-continue' is supported", "expectation_failed");
    // The client waits for this before sending its body.
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    phase_ = Phase::Body;
    arm_timeout(to_duration(lim.write_timeout_s));
    net::async_write(socket_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code wec, size_t) {
      if (wec) return self->close();
      self->read_body();
    });
    return;
  }
  read_body();
}

void HttpConnection::read_body() {
  phase_ = Phase::Body;
  // Reset before every read: the limit is on a pause, not on the whole body.
  arm_timeout(to_duration(state_->limits.body_timeout_s));
  http::async_read_some(socket_, buffer_, *parser_,
                        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(self->timed(ec)); });
}

void HttpConnection::on_body(beast::error_code ec) {
  const auto& lim = state_->limits;
  if (ec) {
    if (phase_ == Phase::Closed) return;
    if (ec == beast::error::timeout)
      return fail_request(408, "the request body stalled for " + seconds_text(lim.body_timeout_s), "request_timeout");
    if (ec == http::error::body_limit)
      return fail_request(413, "the request body is larger than " + std::to_string(lim.max_body_bytes) + " bytes",
                          "request_too_large");
    if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return close();
    return fail_request(400, "malformed request body: " + ec.message(), "bad_request");
  }
  if (!parser_->is_done()) return read_body();
  const HttpRoute* route = state_->router.find(parser_->request().method, parser_->request().path);
  dispatch(*route);
}

// ---- answering ----

void HttpConnection::begin_exchange(HttpRequest request, bool may_keep_alive) {
  phase_ = Phase::Handling;
  disarm_timeout();
  ++served_;
  may_keep_alive = may_keep_alive && served_ < state_->limits.max_keep_alive_requests;
  exchange_ = std::make_shared<ConnectionExchange>(weak_from_this(), socket_.get_executor(), std::move(request),
                                                   may_keep_alive, state_);
}

void HttpConnection::dispatch(const HttpRoute& route) {
  const bool keep_alive = parser_->keep_alive();
  begin_exchange(std::move(parser_->request()), keep_alive);
  parser_.reset();
  std::shared_ptr<ConnectionExchange> ex = exchange_;
  auto run = [state = state_, ex, r = &route] {
    try {
      r->handle(*ex);
    } catch (const std::exception& e) {
      ex->respond(state->hooks.error_response(500, std::string("internal error: ") + e.what(), ""));
    } catch (...) {
      ex->respond(state->hooks.error_response(500, "internal error", ""));
    }
    ex->handler_returned();
  };
  if (!route.blocking) return run();
  if (state_->blocking_handlers.fetch_add(1) >= state_->max_blocking_handlers) {
    state_->blocking_handlers.fetch_sub(1);
    ex->respond(state_->hooks.error_response(
        429, "too many concurrent requests (limit " + std::to_string(state_->max_blocking_handlers) + ")",
        "too_many_requests"));
    ex->handler_returned();
    return;
  }
  // `self` keeps the connection (and so the strand's work) alive while the handler runs.
  net::post(*state_->handler_pool, [run, self = shared_from_this()] {
    run();
    self->state_->blocking_handlers.fetch_sub(1);
  });
  watch_for_disconnect();
}

void HttpConnection::watch_for_disconnect() {
  socket_.async_wait(net::socket_base::wait_read, [self = shared_from_this()](beast::error_code ec) {
    if (ec || self->phase_ != Phase::Handling) return;
    char byte = 0;
    const ssize_t n = ::recv(self->socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      self->close();  // end of stream or reset: the handler sees client_gone() and gives up
      return;
    }
    if (n < 0) return self->watch_for_disconnect();  // spurious wake-up
    // A pipelined request arrived: it is read after this response; nothing more to learn here.
  });
}

void HttpConnection::fail_request(int status, const std::string& message, const std::string& code,
                                  bool may_keep_alive) {
  HttpRequest request;
  if (parser_) {
    request = std::move(parser_->request());
    parser_.reset();
  }
  if (request.method.empty()) request.method = "-";
  if (request.target.empty()) request.target = request.path = "-";
  begin_exchange(std::move(request), may_keep_alive);
  exchange_->respond(state_->hooks.error_response(status, message, code));
}

void HttpConnection::flush() {
  if (writing_ || !exchange_ || phase_ == Phase::Closed) return;
  if (exchange_->take(out_)) return response_done();
  if (out_.empty()) return;
  writing_ = true;
  arm_timeout(to_duration(state_->limits.write_timeout_s));
  net::async_write(socket_, net::buffer(out_), [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->writing_ = false;
    self->disarm_timeout();
    if (ec) return self->close();  // the reader is gone or stalled past the write timeout
    if (self->exchange_) self->exchange_->on_written(n);
    self->flush();
  });
}

void HttpConnection::report(int status) {
  const HttpRequest& req = exchange_->request();
  if (state_->hooks.on_request_done)
    state_->hooks.on_request_done(HttpRequestSummary{
        req.method, req.target, req.path, status, Seconds(Clock::now() - request_start_).count(), exchange_->note()});
}

void HttpConnection::response_done() {
  disarm_timeout();
  report(exchange_->status());
  const bool keep = exchange_->keep_alive() && !state_->draining;
  exchange_.reset();
  if (keep) return wait_for_request(false);
  linger_then_close();
}

void HttpConnection::linger_then_close() {
  phase_ = Phase::Closing;
  beast::error_code ignored;
  socket_.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  buffer_.consume(buffer_.size());  // whatever followed is never parsed (Note [HTTP limits])
  linger_deadline_ = Clock::now() + kLingerTotal;
  linger();
}

void HttpConnection::linger() {
  const auto left = linger_deadline_ - Clock::now();
  if (left <= Clock::duration::zero()) return close();
  arm_timeout(std::min<Clock::duration>(left, kLingerRead));
  socket_.async_read_some(buffer_.prepare(kReadChunk), [self = shared_from_this()](beast::error_code ec, size_t) {
    self->buffer_.consume(self->buffer_.size());
    if (ec) return self->close();
    self->linger();
  });
}

void HttpConnection::close() {
  if (phase_ == Phase::Closed) return;
  phase_ = Phase::Closed;
  if (exchange_) {
    // response_done() drops the exchange once its last byte is written: this one never was.
    exchange_->mark_gone();
    report(499);
    exchange_.reset();
  }
  parser_.reset();
  beast::error_code ignored;
  socket_.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  timer_.cancel();
  socket_.close(ignored);
}

void HttpConnection::arm_timeout(Clock::duration timeout) {
  timed_out_ = false;
  timer_.expires_after(timeout);  // cancels the previous wait
  timer_.async_wait([self = shared_from_this(), generation = ++timer_generation_](beast::error_code ec) {
    if (ec || generation != self->timer_generation_ || self->phase_ == Phase::Closed) return;
    self->timed_out_ = true;
    beast::error_code ignored;
    self->socket_.cancel(ignored);
  });
}

void HttpConnection::disarm_timeout() {
  ++timer_generation_;
  timed_out_ = false;
  timer_.cancel();
}

beast::error_code HttpConnection::timed(beast::error_code ec) const {
  return ec && timed_out_ ? beast::error_code(beast::error::timeout) : ec;
}

}  // namespace opchain::server
