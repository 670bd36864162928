#include "server/http_request_parser.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <string>

#include "server/http_router.h"

namespace opchain::server {

namespace http = boost::beast::http;

namespace {

// Feeds the whole input as one buffer, as many times as the parser consumes something.
boost::beast::error_code parse(HttpRequestParser& p, const std::string& input) {
  boost::beast::error_code ec;
  size_t used = 0;
  while (used < input.size() && !p.is_done()) {
    const size_t n = p.put(boost::asio::buffer(input.data() + used, input.size() - used), ec);
    if (ec == http::error::need_more) return {};
    if (ec) return ec;
    if (n == 0) break;
    used += n;
  }
  return ec;
}

std::string head_with(size_t headers) {
  std::string s = "GET /x?q=1 HTTP/1.1\r\nHost: h\r\n";
  for (size_t i = 1; i < headers; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
  return s + "\r\n";
}

}  // namespace

TEST(HttpRequestParser, BuildsTheRequest) {
  HttpLimits lim;
  HttpRequestParser p(lim);
  ASSERT_FALSE(parse(p,
                     "POST /v1/completions?a=b HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer k\r\n"
                     "Content-Length: 5\r\n\r\nhello"));
  ASSERT_TRUE(p.is_done());
  const HttpRequest& r = p.request();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/completions?a=b");
  EXPECT_EQ(r.path, "/v1/completions");
  EXPECT_EQ(r.version, 11);
  EXPECT_EQ(r.header("authorization"), "Bearer k");
  EXPECT_EQ(r.header_count("HOST"), 1u);
  EXPECT_EQ(r.body, "hello");
}

TEST(HttpRequestParser, HeaderCountLimit) {
  HttpLimits lim;
  lim.max_header_count = 10;
  HttpRequestParser ok(lim);
  EXPECT_FALSE(parse(ok, head_with(10)));
  HttpRequestParser over(lim);
  EXPECT_EQ(parse(over, head_with(11)), http::error::header_limit);
  EXPECT_TRUE(over.too_many_headers());
}

TEST(HttpRequestParser, RequestLineLimit) {
  HttpLimits lim;
  lim.max_request_line_bytes = 64;
  HttpRequestParser p(lim);
  EXPECT_EQ(parse(p, "GET /" + std::string(100, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n"), http::error::bad_target);
  EXPECT_TRUE(p.request_line_too_long());
}

TEST(HttpRequestParser, HeadAndBodyBytesAreBounded) {
  HttpLimits lim;
  lim.max_header_bytes = 1024;
  lim.max_body_bytes = 16;
  HttpRequestParser head(lim);
  EXPECT_EQ(parse(head, "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n"),
            http::error::header_limit);
  EXPECT_FALSE(head.too_many_headers());
  HttpRequestParser body(lim);
  EXPECT_EQ(parse(body, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n"),
            http::error::body_limit);
}

TEST(HttpRequestParser, DeclaredLengthIsNotReservedUpFront) {
  HttpLimits lim;
  HttpRequestParser p(lim);
  ASSERT_FALSE(parse(p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 8000000\r\n\r\nab"));
  EXPECT_LT(p.request().body.capacity(), 1u << 20);
}

TEST(HttpRequestParser, StrictFraming) {
  HttpLimits lim;
  for (const std::string bad : {
           "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
           "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n",
           "GET / HTTP/1.1\r\nHost : h\r\n\r\n",
           "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       }) {
    HttpRequestParser p(lim);
    EXPECT_TRUE(parse(p, bad)) << bad;
  }
}

TEST(HttpRouter, ExactAndPrefixRoutes) {
  HttpRouter router;
  router.add({"GET", "/v1/models", false, nullptr, nullptr});
  router.add({"GET", "/v1/models/*", false, nullptr, nullptr});
  EXPECT_EQ(router.find("GET", "/v1/models")->path, "/v1/models");
  EXPECT_EQ(router.find("GET", "/v1/models/x")->path, "/v1/models/*");
  EXPECT_EQ(router.find("GET", "/v1/models/"), nullptr);  // the prefix needs a rest
  EXPECT_EQ(router.find("POST", "/v1/models"), nullptr);
}

TEST(HttpMessage, PercentDecode) {
  std::string out;
  EXPECT_TRUE(percent_decode("a%20b%2F", out));
  EXPECT_EQ(out, "a b/");
  EXPECT_FALSE(percent_decode("a%2", out));
  EXPECT_FALSE(percent_decode("a%zz", out));
}

}  // namespace opchain::server
