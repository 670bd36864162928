#include "server/http_request_parser.h"

#include <boost/beast/http/error.hpp>

#include <algorithm>

namespace opchain::server {

namespace http = boost::beast::http;

HttpRequestParser::HttpRequestParser(const HttpLimits& limits) : limits_(limits) {
  header_limit(static_cast<std::uint32_t>(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
  body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
}

void HttpRequestParser::on_request_impl(http::verb, string_view method, string_view target, int version,
                                        error_code& ec) {
  request_line_seen_ = true;
  // "METHOD SP target SP HTTP/1.1"
  if (method.size() + target.size() + 10 > limits_.max_request_line_bytes) {
    request_line_too_long_ = true;
    ec = http::error::bad_target;
    return;
  }
  request_.method.assign(method.data(), method.size());
  request_.target.assign(target.data(), target.size());
  request_.path = request_.target.substr(0, request_.target.find('?'));
  request_.version = version;
}

void HttpRequestParser::on_response_impl(int, string_view, int, error_code& ec) { ec = http::error::bad_version; }

void HttpRequestParser::on_field_impl(http::field, string_view name, string_view value, error_code& ec) {
  if (request_.headers.size() >= limits_.max_header_count) {
    too_many_headers_ = true;
    ec = http::error::header_limit;
    return;
  }
  request_.headers.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
}

void HttpRequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) {
  // Reserve what is likely to arrive soon, not what the client claims (see the header).
  static constexpr std::uint64_t kInitialReserve = 64 * 1024;
  if (content_length) request_.body.reserve(static_cast<size_t>(std::min(*content_length, kInitialReserve)));
}

std::size_t HttpRequestParser::on_body_impl(string_view body, error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

std::size_t HttpRequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code&) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

}  // namespace opchain::server
