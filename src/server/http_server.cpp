#include "server/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstdio>
#include <thread>
#include <vector>

#include "core/error.h"
#include "server/http_connection.h"

namespace opchain::server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpServer::Impl {
  // Declared first so it is destroyed last: connections destroyed with the io_context still use it.
  std::shared_ptr<HttpServerState> state = std::make_shared<HttpServerState>();
  std::unique_ptr<net::thread_pool> handlers;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(ioc);
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  std::vector<std::thread> io_threads;
  std::atomic<bool> accept_stopped{false}, stopped{false};

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
      if (state->draining || !acceptor.is_open()) return;
      if (ec) {
        // Out of file descriptors and the like: retry shortly instead of spinning on the error.
        std::fprintf(stderr, "opchain serve: accept failed: %s; retrying\n", ec.message().c_str());
        accept_retry.expires_after(std::chrono::milliseconds(100));
        accept_retry.async_wait([this](boost::system::error_code tec) {
          if (!tec) accept();
        });
        return;
      }
      on_accepted(std::move(socket));
      accept();
    });
  }

  void on_accepted(tcp::socket socket) {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);  // every SSE chunk should leave at once, not wait for Nagle
    const auto peer = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    const std::string client = peer.address().to_string();
    const HttpLimits& lim = state->limits;
    size_t total = 0, from_client = 0;
    {
      std::lock_guard lock(state->mu);
      total = state->connections.size();
      auto it = state->connections_per_client.find(client);
      from_client = it == state->connections_per_client.end() ? 0 : it->second;
    }
    // Refusals are answered (and so count as connections) up to a margin; past it they are dropped
    // unanswered, so a flood costs a file descriptor for microseconds only.
    if (total >= lim.max_connections + 64) return;
    auto conn = std::make_shared<HttpConnection>(std::move(socket), state, client);
    {
      std::lock_guard lock(state->mu);
      state->connections[conn.get()] = conn;
    }
    if (total >= lim.max_connections)
      conn->refuse(503, "the server has " + std::to_string(lim.max_connections) + " connections open; retry later",
                   "too_many_connections");
    else if (from_client >= lim.max_connections_per_client)
      conn->refuse(429, "this client has " + std::to_string(lim.max_connections_per_client) + " connections open",
                   "too_many_connections");
    else
      conn->start();
  }

  std::vector<std::shared_ptr<HttpConnection>> connections() {
    std::vector<std::shared_ptr<HttpConnection>> out;
    std::lock_guard lock(state->mu);
    for (auto& [ptr, weak] : state->connections)
      if (auto c = weak.lock()) out.push_back(std::move(c));
    return out;
  }
};

HttpServer::HttpServer(HttpLimits limits, HttpRouter router, HttpServerHooks hooks, size_t handler_threads)
    : impl_(std::make_unique<Impl>()) {
  if (handler_threads == 0) throw InvalidArgumentError("HttpServer needs at least one handler thread");
  if (!hooks.error_response) throw InvalidArgumentError("HttpServer needs an error_response hook");
  auto& st = *impl_->state;
  st.limits = limits;
  st.router = std::move(router);
  st.hooks = std::move(hooks);
  impl_->handlers = std::make_unique<net::thread_pool>(handler_threads);
  st.handler_pool = impl_->handlers.get();
  st.max_blocking_handlers = handler_threads;
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::listen(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  boost::system::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) throw Error("cannot bind " + where + ": cannot resolve '" + host + "': " + ec.message());
  const tcp::endpoint endpoint = *endpoints.begin();
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  // SO_REUSEADDR allows a quick restart; no SO_REUSEPORT, which would let a second server bind the
  // same port and silently take half the connections.
  if (!ec) acc.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  // The kernel's maximum backlog: a burst of connections waits there instead of having SYNs dropped.
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot bind " + where + " (in use, or not a local address?): " + ec.message());
  return acc.local_endpoint().port();
}

void HttpServer::start(size_t io_threads) {
  impl_->accept();
  for (size_t i = 0; i < std::max<size_t>(io_threads, 1); ++i)
    impl_->io_threads.emplace_back([this] {
      impl_->ioc.run();
      if (!impl_->state->draining) impl_->accept_stopped = true;
    });
}

bool HttpServer::accepting() const { return !impl_->accept_stopped; }

size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->state->mu);
  return impl_->state->connections.size();
}

void HttpServer::drain() {
  if (impl_->state->draining.exchange(true)) return;
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    boost::system::error_code ignored;
    impl->accept_retry.cancel();
    impl->acceptor.close(ignored);
  });
  for (auto& c : impl_->connections()) c->drain();
}

bool HttpServer::wait_closed(double timeout_s) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    {
      std::lock_guard lock(impl_->state->mu);
      if (impl_->state->connections.empty()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void HttpServer::stop() {
  if (impl_->stopped.exchange(true)) return;
  drain();
  for (auto& c : impl_->connections()) c->close_now();
  // Handlers still writing see their client gone and return; the socket threads must still run
  // for that, so they stop only afterwards.
  impl_->handlers->join();
  wait_closed(2.0);
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->io_threads)
    if (t.joinable()) t.join();
}

}  // namespace opchain::server
