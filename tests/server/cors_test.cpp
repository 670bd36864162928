// The CORS policy: nothing by default, listed origins (or *) get their headers and preflights.
#include <gtest/gtest.h>

#include "core/error.h"
#include "server/cors.h"

namespace opchain::server {
namespace {

std::string header(const HeaderList& h, const std::string& name) {
  for (const auto& [k, v] : h)
    if (k == name) return v;
  return "";
}

TEST(Cors, OffByDefault) {
  const CorsPolicy none;
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.response_headers("https://a.example").empty());
  EXPECT_EQ(none.preflight("https://a.example", "POST").status, 403);
}

TEST(Cors, ListedOriginsOnly) {
  const CorsPolicy p({"https://app.example.com", "http://localhost:3000/"});
  EXPECT_TRUE(p.allows("http://localhost:3000"));
  EXPECT_FALSE(p.allows("https://evil.example"));
  EXPECT_FALSE(p.allows(""));
  EXPECT_EQ(header(p.response_headers("https://app.example.com"), "Access-Control-Allow-Origin"),
            "https://app.example.com");
  EXPECT_EQ(header(p.response_headers("https://app.example.com"), "Vary"), "Origin");
  const auto ok = p.preflight("https://app.example.com", "POST");
  EXPECT_EQ(ok.status, 204);
  EXPECT_EQ(header(ok.headers, "Access-Control-Allow-Origin"), "");  // response_headers() add it, once
  EXPECT_NE(header(ok.headers, "Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  EXPECT_NE(header(ok.headers, "Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(p.preflight("https://app.example.com", "DELETE").status, 403);
  const auto denied = p.preflight("https://evil.example", "POST");
  EXPECT_EQ(denied.status, 403);
  EXPECT_TRUE(denied.headers.empty());
}

TEST(Cors, AnyOriginAndBadEntries) {
  const CorsPolicy any({"*"});
  EXPECT_EQ(header(any.response_headers("https://x.example"), "Access-Control-Allow-Origin"), "https://x.example");
  for (const char* bad : {"example.com", "https://a.example/path", "://x", "https://", "ht tp://x"})
    EXPECT_THROW(CorsPolicy({bad}), InvalidArgumentError) << bad;
}

}  // namespace
}  // namespace opchain::server
