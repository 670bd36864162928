#include "server/request_log.h"

#include <gtest/gtest.h>

namespace opchain::server {

TEST(RequestLog, ControlBytesCannotForgeLinesOrDriveTheTerminal) {
  EXPECT_EQ(escape_for_log("/a\nGET /b 200"), "/a\\x0aGET /b 200");
  EXPECT_EQ(escape_for_log("\x1b[31m\r\t"), "\\x1b[31m\\x0d\\x09");
  EXPECT_EQ(escape_for_log(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_for_log("\x7f\x9b\xff"), "\\x7f\\x9b\\xff");  // DEL, a C1 CSI, a stray byte
  EXPECT_EQ(escape_for_log("say \"hi\" \\"), "say \\x22hi\\x22 \\x5c");
  EXPECT_EQ(escape_for_log("/v1/models?x=%0a"), "/v1/models?x=%0a");  // percent escapes stay as sent
}

TEST(RequestLog, LongInputIsCut) {
  EXPECT_EQ(escape_for_log(std::string(2000, 'a'), 10), "aaaaaaaaaa...");
  EXPECT_EQ(escape_for_log("abc", 3), "abc");
}

}  // namespace opchain::server
