// ParallelWorld without mpirun: a world of one, and the errors that say how to start more ranks.
// The MPI world itself is tested under mpirun by tests/dist/mpi_world_check.cpp (ctest dist.*).
#include "dist/world.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

#include "test_paths.h"

namespace opchain {
namespace {

// Sets or clears one environment variable for the scope of a test, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "(no InvalidArgumentError)";
}

TEST(LaunchedUnderMpirun, ReadsTheLaunchersVariables) {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMIX_RANK", nullptr), c("PMI_SIZE", nullptr);
  EXPECT_FALSE(launched_under_mpirun());
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    ScopedEnv set(name, "2");
    EXPECT_TRUE(launched_under_mpirun()) << name;
  }
}

TEST(ParallelWorld, SingleIsAWorldOfOne) {
  auto world = ParallelWorld::single();
  EXPECT_EQ(world->rank(), 0);
  EXPECT_EQ(world->size(), 1);
  EXPECT_TRUE(world->is_driver());
  EXPECT_EQ(world->tp_size(), 1);
  EXPECT_EQ(world->ep_size(), 1);
  EXPECT_EQ(world->tp_rank(), 0);
  EXPECT_EQ(world->ep_rank(), 0);
  EXPECT_EQ(world->world().name(), "world");
  EXPECT_EQ(world->tp().name(), "tp");
  EXPECT_EQ(world->ep().name(), "ep");
  float x = 2;
  world->tp().all_reduce_sum(&x, 1);
  world->ep().all_reduce_sum(&x, 1);
  world->world().all_reduce_sum(&x, 1);
  EXPECT_EQ(x, 2);
  EXPECT_EQ(world->stats().collectives, 3);
  world->reset_stats();
  EXPECT_EQ(world->stats().collectives, 0);
}

TEST(ParallelWorld, OpenWithoutMpirunIsSingle) {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMIX_RANK", nullptr), c("PMI_SIZE", nullptr);
  auto world = ParallelWorld::open({});
  EXPECT_EQ(world->size(), 1);
  EXPECT_EQ(world->tp_size(), 1);
}

TEST(ParallelWorld, MoreThanOneRankWithoutMpirunSaysHowToStartThem) {
  ScopedEnv a("OMPI_COMM_WORLD_SIZE", nullptr), b("PMIX_RANK", nullptr), c("PMI_SIZE", nullptr);
  EXPECT_EQ(message_of([] { ParallelWorld::open({.tp = 2}); }), "--tp 2 needs 2 processes: run under mpirun -np 2");
  EXPECT_EQ(message_of([] { ParallelWorld::open({.ep = 4}); }), "--ep 4 needs 4 processes: run under mpirun -np 4");
  // Both must divide the world size: the least such world.
  EXPECT_EQ(message_of([] { ParallelWorld::open({.tp = 2, .ep = 3}); }),
            "--tp 2 --ep 3 needs 6 processes: run under mpirun -np 6");
  EXPECT_EQ(message_of([] { ParallelWorld::single({.tp = 2}); }), "--tp 2 needs 2 processes: run under mpirun -np 2");
}

TEST(ParallelWorld, RefusesALayoutBelowOne) {
  const std::string m = message_of([] { ParallelWorld::single({.tp = 0, .ep = 1}); });
  EXPECT_NE(m.find("tp 0, ep 1"), std::string::npos) << m;
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
}

TEST(ParallelWorld, AbortOfASingleProcessExitsWithTheCodeAndTheMessage) {
  EXPECT_EXIT(ParallelWorld::single()->abort(7, "the step failed"), ::testing::ExitedWithCode(7),
              "opchain: rank 0/1: the step failed");
}

// Note [MPI library]: only libopchain_mpi.so links libmpi, so a single process runs without MPI.
TEST(ParallelWorld, TheOpchainBinaryDoesNotLinkMpi) {
  const std::string command = "ldd '" + test::opchain_binary() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;
  ASSERT_NE(out.find("libc.so"), std::string::npos) << out;
  EXPECT_EQ(out.find("libmpi"), std::string::npos) << out;
}

}  // namespace
}  // namespace opchain
