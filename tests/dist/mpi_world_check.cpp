// The MPI world as the engine opens it: ParallelWorld::open under mpirun, which dlopens
// libopchain_mpi.so. Run by ctest (tests/dist/CMakeLists.txt) as
//   mpirun -np N opchain_mpi_world_check MODE [ARGS]
// MODE collectives: every collective on random data, checked against the value computed locally
//   from every rank's seed, over the world and the tp/ep groups of every layout that fits; stats;
//   the large-message paths under a lowered message limit; ranks started with different layouts.
//   Exits 0 on every rank when all checks pass.
// MODE skip-collective: rank 1 skips an all-reduce; the others must get a CommError within
//   OPCHAIN_COMM_TIMEOUT_S and end the job with it (ParallelWorld::abort).
// MODE exit-mid-run: rank 1 calls _exit(3) between collectives; mpirun must end the job.
// MODE layout TP EP: opens the world with that layout; an error is printed and exits 1.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dist/world.h"

namespace opchain {
namespace {

int g_failures = 0;

#define CHECK_THAT(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      ++g_failures;                                                                 \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fputc('\n', stderr);                                                     \
    }                                                                               \
  } while (0)

// The data of group rank `rank` for check `tag`: every rank can compute every other rank's.
std::mt19937_64 rng_of(int rank, int tag) {
  return std::mt19937_64(0x9e3779b97f4a7c15ULL * (rank + 1) + 1000003 * tag);
}

// Small integers, so that sums are exact in float whatever order MPI adds them in.
std::vector<float> ints_of(int rank, int tag, int64_t n) {
  auto rng = rng_of(rank, tag);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(d(rng));
  return v;
}

std::vector<uint8_t> bytes_of(int rank, int tag, int64_t n) {
  auto rng = rng_of(rank, tag);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

// all_to_all_v: how many bytes group rank `src` sends `dst` in check `tag`. About a quarter of the
// pairs send nothing, and in odd checks no rank sends to itself.
int64_t pair_bytes(int src, int dst, int tag) {
  auto rng = rng_of(src * 131 + dst, tag);
  const bool empty = rng() % 4 == 0 || (tag % 2 == 1 && src == dst);
  return empty ? 0 : static_cast<int64_t>(1 + rng() % 300);
}

uint8_t pair_byte(int src, int dst, int tag, int64_t i) {
  return static_cast<uint8_t>(src * 37 + dst * 11 + tag + i * 7);
}

void check_all_reduce(Communicator& c, int tag, int64_t n) {
  std::vector<float> data = ints_of(c.rank(), tag, n);
  c.all_reduce_sum(data.data(), n);
  std::vector<float> want(static_cast<size_t>(n), 0.0f);
  for (int r = 0; r < c.size(); ++r) {
    const auto v = ints_of(r, tag, n);
    for (int64_t i = 0; i < n; ++i) want[i] += v[i];
  }
  CHECK_THAT(data == want, "all_reduce_sum of %lld floats on '%s'", static_cast<long long>(n), c.name().c_str());
}

void check_all_gather(Communicator& c, int tag, int64_t bytes) {
  const auto send = bytes_of(c.rank(), tag, bytes);
  std::vector<uint8_t> recv(static_cast<size_t>(bytes * c.size()), 0xAB);
  c.all_gather(send.data(), bytes, recv.data());
  std::vector<uint8_t> want;
  for (int r = 0; r < c.size(); ++r) {
    const auto v = bytes_of(r, tag, bytes);
    want.insert(want.end(), v.begin(), v.end());
  }
  CHECK_THAT(recv == want, "all_gather of %lld bytes on '%s'", static_cast<long long>(bytes), c.name().c_str());
}

void check_reduce_scatter(Communicator& c, int tag, int64_t count) {
  const auto send = ints_of(c.rank(), tag, count * c.size());
  std::vector<float> recv(static_cast<size_t>(count), -1.0f);
  c.reduce_scatter_sum(send.data(), recv.data(), count);
  std::vector<float> want(static_cast<size_t>(count), 0.0f);
  for (int r = 0; r < c.size(); ++r) {
    const auto v = ints_of(r, tag, count * c.size());
    for (int64_t i = 0; i < count; ++i) want[i] += v[c.rank() * count + i];
  }
  CHECK_THAT(recv == want, "reduce_scatter_sum of %lld floats a block on '%s'", static_cast<long long>(count),
             c.name().c_str());
}

void check_all_to_all_v(Communicator& c, int tag) {
  const int me = c.rank(), n = c.size();
  std::vector<int64_t> send_bytes(n), recv_bytes(n);
  std::vector<uint8_t> send, want;
  for (int p = 0; p < n; ++p) {
    send_bytes[p] = pair_bytes(me, p, tag);
    for (int64_t i = 0; i < send_bytes[p]; ++i) send.push_back(pair_byte(me, p, tag, i));
    recv_bytes[p] = pair_bytes(p, me, tag);
    for (int64_t i = 0; i < recv_bytes[p]; ++i) want.push_back(pair_byte(p, me, tag, i));
  }
  std::vector<uint8_t> recv(want.size(), 0xAB);
  c.all_to_all_v(send.data(), send_bytes, recv.data(), recv_bytes);
  CHECK_THAT(recv == want, "all_to_all_v (tag %d) on '%s'", tag, c.name().c_str());
}

void check_all_to_all(Communicator& c, int tag, int64_t bytes) {
  const int me = c.rank(), n = c.size();
  // Block p of rank r: bytes_of(r * n + p).
  std::vector<uint8_t> send, want;
  for (int p = 0; p < n; ++p) {
    const auto out = bytes_of(me * n + p, tag, bytes);
    send.insert(send.end(), out.begin(), out.end());
    const auto in = bytes_of(p * n + me, tag, bytes);
    want.insert(want.end(), in.begin(), in.end());
  }
  std::vector<uint8_t> recv(want.size(), 0xAB);
  c.all_to_all(send.data(), bytes, recv.data());
  CHECK_THAT(recv == want, "all_to_all of %lld bytes a block on '%s'", static_cast<long long>(bytes), c.name().c_str());
}

void check_broadcast(Communicator& c, int tag, int64_t bytes) {
  for (int root = 0; root < c.size(); ++root) {
    std::vector<uint8_t> data = c.rank() == root ? bytes_of(root, tag, bytes) : std::vector<uint8_t>(bytes, 0xAB);
    c.broadcast(data.data(), bytes, root);
    CHECK_THAT(data == bytes_of(root, tag, bytes), "broadcast of %lld bytes from %d on '%s'",
               static_cast<long long>(bytes), root, c.name().c_str());
  }
}

void check_collectives(Communicator& c) {
  int tag = 0;
  for (int64_t n : {0, 1, 1000, 4099}) check_all_reduce(c, ++tag, n);
  for (int64_t b : {0, 1, 777}) check_all_gather(c, ++tag, b);
  for (int64_t n : {0, 5, 123}) check_reduce_scatter(c, ++tag, n);
  for (int i = 0; i < 4; ++i) check_all_to_all_v(c, ++tag);
  {
    // Every pair empty.
    std::vector<int64_t> zeros(c.size(), 0);
    uint8_t dummy = 0;
    c.all_to_all_v(&dummy, zeros, &dummy, zeros);
  }
  for (int64_t b : {0, 13, 500}) check_all_to_all(c, ++tag, b);
  for (int64_t b : {0, 1001}) check_broadcast(c, ++tag, b);
  c.barrier();
}

// The counting rule of dist/mpi_communicator.cpp, on a known sequence.
void check_stats(Communicator& c) {
  const int64_t others = c.size() - 1;
  c.reset_stats();
  std::vector<float> f(40 * c.size(), 1.0f), g(40);
  c.all_reduce_sum(f.data(), 10);
  std::vector<uint8_t> send(64 * c.size(), 1), recv(64 * c.size());
  c.all_gather(send.data(), 8, recv.data());
  c.reduce_scatter_sum(f.data(), g.data(), 3);
  std::vector<int64_t> counts(c.size(), 6);
  counts[c.rank()] = 2;  // the block a rank keeps is not traffic
  c.all_to_all_v(send.data(), counts, recv.data(), counts);
  c.all_to_all(send.data(), 5, recv.data());
  c.broadcast(send.data(), 16, 0);
  c.barrier();
  const CommStats& s = c.stats();
  const int64_t broadcast_sent = c.rank() == 0 ? 16 * others : 0;
  const int64_t broadcast_received = c.rank() == 0 ? 0 : 16;
  const int64_t both = (c.size() > 1 ? 40 : 0) + 8 * others + 12 * others + 6 * others + 5 * others;
  CHECK_THAT(s.collectives == 7, "%lld collectives on '%s'", static_cast<long long>(s.collectives), c.name().c_str());
  CHECK_THAT(s.bytes_sent == both + broadcast_sent, "bytes_sent %lld on '%s' rank %d, want %lld",
             static_cast<long long>(s.bytes_sent), c.name().c_str(), c.rank(),
             static_cast<long long>(both + broadcast_sent));
  CHECK_THAT(s.bytes_received == both + broadcast_received, "bytes_received %lld on '%s' rank %d, want %lld",
             static_cast<long long>(s.bytes_received), c.name().c_str(), c.rank(),
             static_cast<long long>(both + broadcast_received));
  CHECK_THAT(s.seconds > 0, "seconds %g", s.seconds);
  c.reset_stats();
}

// Group membership: the tp group of rank r is the ranks with r / tp, ordered by rank % tp (ep alike).
void check_group(Communicator& group, int world_rank, int group_size, const char* name) {
  CHECK_THAT(group.size() == group_size, "%s size %d, want %d", name, group.size(), group_size);
  CHECK_THAT(group.rank() == world_rank % group_size, "%s rank %d of world rank %d", name, group.rank(), world_rank);
  CHECK_THAT(group.name() == name, "name '%s'", group.name().c_str());
  std::vector<int32_t> members(group.size());
  const int32_t me = world_rank;
  group.all_gather(&me, sizeof me, members.data());
  for (int j = 0; j < group.size(); ++j)
    CHECK_THAT(members[j] == (world_rank / group_size) * group_size + j, "%s member %d is world rank %d", name, j,
               members[j]);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void check_layouts(int size) {
  for (int tp = 1; tp <= size; ++tp) {
    for (int ep = 1; ep <= size; ++ep) {
      if (size % tp || size % ep) continue;
      auto world = ParallelWorld::open({.tp = tp, .ep = ep});
      CHECK_THAT(world->stats().collectives == 0, "a fresh world's stats are not zero");
      check_group(world->tp(), world->rank(), tp, "tp");
      check_group(world->ep(), world->rank(), ep, "ep");
      CHECK_THAT(world->tp_size() == tp && world->ep_size() == ep, "tp_size %d ep_size %d", world->tp_size(),
                 world->ep_size());
      check_collectives(world->tp());
      check_collectives(world->ep());
      CHECK_THAT(world->tp().timeout_seconds() == world->world().timeout_seconds(), "tp lost the world's timeout");
      const CommStats total = world->stats();
      CHECK_THAT(total.collectives == world->world().stats().collectives + world->tp().stats().collectives +
                                          world->ep().stats().collectives,
                 "ParallelWorld::stats is not the sum of its communicators'");
    }
  }
}

// Ranks given different --tp: every rank gets the error, naming every rank's layout.
void check_mismatched_layout(int rank, int size) {
  const ParallelConfig mine{.tp = rank == 0 ? size : 1, .ep = 1};
  try {
    ParallelWorld::open(mine);
    CHECK_THAT(false, "rank %d: different layouts were accepted", rank);
  } catch (const InvalidArgumentError& e) {
    const std::string m = e.what();
    CHECK_THAT(contains(m, "different parallel layouts") &&
                   contains(m, "rank 0: tp " + std::to_string(size) + ", ep 1") && contains(m, "rank 1: tp 1, ep 1"),
               "message: %s", m.c_str());
  }
}

// Messages past the limit (lowered here from INT_MAX to 100 bytes) go in pieces or as a derived
// type; the two collectives that refuse them say so on every rank before any MPI call.
void check_large_messages() {
  ::setenv("OPCHAIN_MPI_MAX_MESSAGE_BYTES", "100", 1);
  auto world = ParallelWorld::open({});
  ::unsetenv("OPCHAIN_MPI_MAX_MESSAGE_BYTES");
  Communicator& c = world->world();
  int tag = 100;
  check_all_reduce(c, ++tag, 1000);  // 40 pieces
  check_all_reduce(c, ++tag, 25);    // exactly one piece
  for (int64_t b : {0, 100, 101, 300, 777}) check_all_gather(c, ++tag, b);
  for (int64_t b : {0, 250, 400}) check_all_to_all(c, ++tag, b);
  for (int64_t b : {0, 100, 1001}) check_broadcast(c, ++tag, b);
  check_reduce_scatter(c, ++tag, 25);  // 100 bytes a block: at the limit, not past it
  std::vector<float> f(30 * c.size()), g(30);
  try {
    c.reduce_scatter_sum(f.data(), g.data(), 30);
    CHECK_THAT(false, "reduce_scatter_sum past the limit was accepted");
  } catch (const CommError& e) {
    CHECK_THAT(contains(e.what(), "larger than the largest MPI message (100 bytes)"), "%s", e.what());
  }
  std::vector<int64_t> counts(c.size(), 150);
  std::vector<uint8_t> buf(150 * c.size());
  try {
    c.all_to_all_v(buf.data(), counts, buf.data(), counts);
    CHECK_THAT(false, "all_to_all_v past the limit was accepted");
  } catch (const CommError& e) {
    CHECK_THAT(contains(e.what(), "all_to_all_v on communicator 'world'") && contains(e.what(), "past the largest"),
               "%s", e.what());
  }
  c.barrier();  // the refusals left every rank in step
}

int run_collectives() {
  auto world = ParallelWorld::open({});
  const int rank = world->rank(), size = world->size();
  CHECK_THAT(size >= 2, "run under mpirun -np 2 or more (size %d)", size);
  CHECK_THAT(world->world().timeout_seconds() == 300, "default timeout %g", world->world().timeout_seconds());
  check_collectives(world->world());
  // MPI_THREAD_SERIALIZED: the engine's collectives come from a thread that did not start MPI.
  std::thread engine_thread([&] { check_collectives(world->world()); });
  engine_thread.join();
  check_stats(world->world());
  check_layouts(size);
  {
    auto grouped = ParallelWorld::open({.tp = size, .ep = 1});
    check_stats(grouped->tp());
    check_stats(grouped->ep());
  }
  check_mismatched_layout(rank, size);
  check_large_messages();
  // Every rank ends with the same status, so one failing rank is enough to fail the test.
  float failures = static_cast<float>(g_failures);
  world->world().all_reduce_sum(&failures, 1);
  if (rank == 0) std::printf("mpi_world_check: %d ranks, %g failed checks\n", size, failures);
  return failures == 0 ? 0 : 1;
}

int run_skip_collective() {
  auto world = ParallelWorld::open({});
  std::vector<float> data(1000, 1.0f);
  world->world().all_reduce_sum(data.data(), 1000);
  if (world->rank() == 1) {
    // Stuck, not dead: only the timeout can tell the others. MPI_Abort from them ends this sleep.
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  try {
    world->world().all_reduce_sum(data.data(), 1000);
  } catch (const CommError& e) {
    world->abort(1, e.what());
  }
  std::fprintf(stderr, "rank %d: the all-reduce completed without rank 1\n", world->rank());
  return 0;
}

int run_exit_mid_run() {
  auto world = ParallelWorld::open({});
  world->world().barrier();
  if (world->rank() == 1) _exit(3);
  std::vector<float> data(1000, 1.0f);
  world->world().all_reduce_sum(data.data(), 1000);
  world->world().barrier();
  return 0;
}

int run_layout(int tp, int ep) {
  auto world = ParallelWorld::open({.tp = tp, .ep = ep});
  std::printf("rank %d/%d: tp %d of %d, ep %d of %d\n", world->rank(), world->size(), world->tp_rank(),
              world->tp_size(), world->ep_rank(), world->ep_size());
  return 0;
}

// This rank as mpirun numbered it, for errors before the world exists.
std::string launcher_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return std::string(rank ? rank : "?") + "/" + (size ? size : "?");
}

}  // namespace
}  // namespace opchain

int main(int argc, char** argv) {
  using namespace opchain;
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "collectives") return run_collectives();
    if (mode == "skip-collective") return run_skip_collective();
    if (mode == "exit-mid-run") return run_exit_mid_run();
    if (mode == "layout" && argc == 4) return run_layout(std::atoi(argv[2]), std::atoi(argv[3]));
  } catch (const Error& e) {
    std::fprintf(stderr, "opchain: rank %s: %s\n", launcher_rank().c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s collectives | skip-collective | exit-mid-run | layout TP EP\n", argv[0]);
  return 2;
}
