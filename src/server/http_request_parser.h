#pragma once
// A Beast request parser that builds an HttpRequest and enforces the limits Beast's own parser
// lacks: a header count, a request-line length, and a body buffer that grows with what arrives
// instead of reserving what Content-Length claims (a client declaring 8 MiB and sending nothing
// would otherwise cost 8 MiB per connection). Beast itself bounds the head's bytes (header_limit)
// and the body's (body_limit) and rejects conflicting Content-Length, Content-Length with chunked,
// header lines without a colon or with a space before it, and malformed chunk framing.
#include <boost/beast/http/basic_parser.hpp>

#include "server/http_limits.h"
#include "server/http_message.h"

namespace opchain::server {

class HttpRequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  explicit HttpRequestParser(const HttpLimits& limits);

  // Why parsing stopped, beyond Beast's own error code: these limits report header_limit or
  // bad_target from Beast's error set, and the status to answer depends on which one fired.
  bool request_line_seen() const { return request_line_seen_; }
  bool request_line_too_long() const { return request_line_too_long_; }
  bool too_many_headers() const { return too_many_headers_; }

  HttpRequest& request() { return request_; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;

  void on_request_impl(boost::beast::http::verb, string_view method, string_view target, int version,
                       error_code& ec) override;
  void on_response_impl(int, string_view, int, error_code& ec) override;
  void on_field_impl(boost::beast::http::field, string_view name, string_view value, error_code& ec) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) override;
  std::size_t on_body_impl(string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
  void on_finish_impl(error_code&) override {}

  const HttpLimits& limits_;
  HttpRequest request_;
  bool request_line_seen_ = false, request_line_too_long_ = false, too_many_headers_ = false;
};

}  // namespace opchain::server
