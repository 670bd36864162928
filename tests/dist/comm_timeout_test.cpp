// OPCHAIN_COMM_TIMEOUT_S: seconds >= 0, 0 for no deadline, anything else a clear error.
#include "dist/comm_timeout.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace opchain {
namespace {

TEST(CommTimeout, ParsesSeconds) {
  EXPECT_EQ(parse_comm_timeout_seconds("2", "X"), 2);
  EXPECT_EQ(parse_comm_timeout_seconds("0.5", "X"), 0.5);
  EXPECT_EQ(parse_comm_timeout_seconds("0", "X"), 0);
}

TEST(CommTimeout, RefusesWhatIsNotSeconds) {
  for (const char* bad : {"", "abc", "2s", "-1", "inf", "nan", " 3", "1e999"}) {
    try {
      parse_comm_timeout_seconds(bad, "OPCHAIN_COMM_TIMEOUT_S");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgumentError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("OPCHAIN_COMM_TIMEOUT_S='") + bad + "'", 0), 0) << e.what();
    }
  }
}

TEST(CommTimeout, DefaultsTo300WhenUnset) {
  ::unsetenv("OPCHAIN_COMM_TIMEOUT_S");
  EXPECT_EQ(comm_timeout_seconds_from_env(), 300);
  ::setenv("OPCHAIN_COMM_TIMEOUT_S", "7", 1);
  EXPECT_EQ(comm_timeout_seconds_from_env(), 7);
  ::setenv("OPCHAIN_COMM_TIMEOUT_S", "x", 1);
  EXPECT_THROW(comm_timeout_seconds_from_env(), InvalidArgumentError);
  ::unsetenv("OPCHAIN_COMM_TIMEOUT_S");
}

}  // namespace
}  // namespace opchain
