#include "server/connection_exchange.h"

#include <boost/asio/post.hpp>
#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "server/request_log.h"

namespace opchain::server {

namespace {

std::string status_line(int status) {
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
}

}  // namespace

ConnectionExchange::ConnectionExchange(std::weak_ptr<HttpConnection> conn, boost::asio::any_io_executor strand,
                                       HttpRequest request, bool may_keep_alive, std::shared_ptr<HttpServerState> state)
    : conn_(std::move(conn)),
      strand_(std::move(strand)),
      request_(std::move(request)),
      may_keep_alive_(may_keep_alive),
      state_(std::move(state)) {}

void ConnectionExchange::respond(HttpResponse response) {
  {
    std::lock_guard lock(mu_);
    if (head_sent_ || gone_) return;
    std::string head = head_for(response, false);
    head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n\r\n";
    queue(head);
    if (request_.method != "HEAD") queue(response.body);
    ended_ = true;
  }
  kick();
}

bool ConnectionExchange::start_stream(const HttpResponse& head) {
  {
    std::lock_guard lock(mu_);
    if (head_sent_ || gone_) return false;
    chunked_ = request_.version >= 11;
    std::string h = head_for(head, true);
    // HTTP/1.0 has no chunked framing: the body runs until the connection closes.
    h += chunked_ ? "Transfer-Encoding: chunked\r\n\r\n" : "\r\n";
    queue(h);
  }
  kick();
  return true;
}

bool ConnectionExchange::write(std::string_view data) {
  if (data.empty()) return !client_gone();
  {
    std::unique_lock lock(mu_);
    if (!head_sent_ || ended_) return false;
    // The connection's write timeout closes a stalled socket (gone_ then wakes us); this deadline
    // only guards against waiting forever if that somehow never comes.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(state_->limits.write_timeout_s + 1.0));
    if (!room_.wait_until(lock, deadline,
                          [&] { return gone_ || unsent_ < state_->limits.max_buffered_response_bytes; })) {
      gone_ = true;
      lock.unlock();
      if (auto c = conn_.lock()) c->close_now();
      return false;
    }
    if (gone_) return false;
    if (chunked_) {
      char size[24];
      std::snprintf(size, sizeof size, "%zx\r\n", data.size());
      queue(size);
      queue(data);
      queue("\r\n");
    } else {
      queue(data);
    }
  }
  kick();
  return true;
}

bool ConnectionExchange::end_stream() {
  {
    std::lock_guard lock(mu_);
    if (!head_sent_ || ended_ || gone_) return false;
    if (chunked_) queue("0\r\n\r\n");
    ended_ = true;
  }
  kick();
  return true;
}

bool ConnectionExchange::client_gone() const {
  std::lock_guard lock(mu_);
  return gone_;
}

void ConnectionExchange::annotate(std::string note) {
  std::lock_guard lock(mu_);
  note_ = std::move(note);
}

bool ConnectionExchange::take(std::string& out) {
  std::lock_guard lock(mu_);
  out.swap(pending_);
  pending_.clear();
  return ended_ && out.empty();
}

void ConnectionExchange::on_written(size_t n) {
  {
    std::lock_guard lock(mu_);
    unsent_ -= std::min(unsent_, n);
  }
  room_.notify_all();
}

void ConnectionExchange::mark_gone() {
  {
    std::lock_guard lock(mu_);
    gone_ = true;
  }
  room_.notify_all();
}

void ConnectionExchange::handler_returned() {
  bool answered = false;
  {
    std::lock_guard lock(mu_);
    answered = head_sent_;
    if (answered && !ended_) {
      ended_ = true;
      broken_ = true;
    }
  }
  if (!answered)
    respond(state_->hooks.error_response(
        500, "the handler for " + escape_for_log(request_.path, 256) + " returned without answering", ""));
  else
    kick();
}

int ConnectionExchange::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

bool ConnectionExchange::keep_alive() const {
  std::lock_guard lock(mu_);
  return keep_alive_ && !broken_;
}

std::string ConnectionExchange::note() const {
  std::lock_guard lock(mu_);
  return note_;
}

std::string ConnectionExchange::head_for(const HttpResponse& r, bool stream) {
  head_sent_ = true;
  status_ = r.status;
  keep_alive_ = may_keep_alive_ && !state_->draining && (!stream || request_.version >= 11);
  std::string h = status_line(r.status);
  if (!r.content_type.empty()) h += "Content-Type: " + r.content_type + "\r\n";
  for (const auto& [name, value] : r.headers) h += name + ": " + value + "\r\n";
  if (state_->hooks.extra_headers)
    for (const auto& [name, value] : state_->hooks.extra_headers(request_)) h += name + ": " + value + "\r\n";
  h += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  return h;
}

void ConnectionExchange::queue(std::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  unsent_ += bytes.size();
}

void ConnectionExchange::kick() {
  // A strong reference for the post: the handler (and the connection's last owner with it) may be
  // gone before the strand runs this.
  if (auto c = conn_.lock()) boost::asio::post(strand_, [c] { c->flush(); });
}

}  // namespace opchain::server
