// The single-process communicator: every collective of a world of one is a copy or nothing, and it
// still counts its collectives.
#include "backends/communicator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace opchain {
namespace {

TEST(SingleProcessCommunicator, IsRankZeroOfOne) {
  auto comm = make_single_process_communicator("tp");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->name(), "tp");
  EXPECT_EQ(comm->timeout_seconds(), 300);
}

TEST(SingleProcessCommunicator, CollectivesCopyOrLeaveTheData) {
  auto comm = make_single_process_communicator();
  std::vector<float> data = {1.5f, -2, 3};
  comm->all_reduce_sum(data.data(), 3);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2, 3}));

  const std::vector<uint8_t> send = {1, 2, 3, 4, 5};
  std::vector<uint8_t> recv(5);
  comm->all_gather(send.data(), 5, recv.data());
  EXPECT_EQ(recv, send);

  std::vector<float> reduced(3);
  comm->reduce_scatter_sum(data.data(), reduced.data(), 3);
  EXPECT_EQ(reduced, data);

  std::fill(recv.begin(), recv.end(), 0);
  const int64_t counts[1] = {5};
  comm->all_to_all_v(send.data(), counts, recv.data(), counts);
  EXPECT_EQ(recv, send);

  std::fill(recv.begin(), recv.end(), 0);
  comm->all_to_all(send.data(), 5, recv.data());
  EXPECT_EQ(recv, send);

  comm->broadcast(recv.data(), 5, 0);
  EXPECT_EQ(recv, send);
  comm->barrier();
  EXPECT_EQ(comm->stats().collectives, 7);  // the barrier counts, as in MPI's
  EXPECT_EQ(comm->stats().bytes_sent, 0);
  comm->reset_stats();
  EXPECT_EQ(comm->stats().collectives, 0);
}

TEST(SingleProcessCommunicator, RefusesWhatNeedsAnotherRank) {
  auto comm = make_single_process_communicator("ep");
  std::vector<uint8_t> buf(4);
  EXPECT_THROW(comm->broadcast(buf.data(), 4, 1), CommError);
  const int64_t two[2] = {2, 2};
  const int64_t four[1] = {4};
  const int64_t three[1] = {3};
  EXPECT_THROW(comm->all_to_all_v(buf.data(), two, buf.data(), two), CommError);
  try {
    comm->all_to_all_v(buf.data(), four, buf.data(), three);
    FAIL() << "unequal counts accepted";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("'ep'"), std::string::npos) << e.what();
  }
}

TEST(SingleProcessCommunicator, SplitKeepsTheSizeAndTakesTheName) {
  auto comm = make_single_process_communicator();
  auto child = comm->split(0, 0, "tp");
  EXPECT_EQ(child->size(), 1);
  EXPECT_EQ(child->name(), "tp");
}

}  // namespace
}  // namespace opchain
