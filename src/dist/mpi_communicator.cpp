// Open MPI behind the Communicator interface (Note [Communicator]); built into libopchain_mpi.so only
// (Note [MPI library]). Every collective is MPI's non-blocking form completed by a test loop with a
// deadline, so a peer that died, hangs or skipped the collective becomes a CommError, not a hang.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/communicator.h"
#include "dist/mpi_library.h"

namespace opchain {

namespace {

// Set once a collective failed or the job is being aborted. MPI_Finalize synchronises with every
// peer, and a peer may be dead or still inside the collective this rank gave up on, so after that
// the process exits without finalising and mpirun ends the rest of the job.
std::atomic<bool> g_abandoned{false};

void finalize_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized && !g_abandoned.load()) MPI_Finalize();
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

// MPI counts are int. Tests lower this limit (OPCHAIN_MPI_MAX_MESSAGE_BYTES) to run the paths of
// messages past INT_MAX bytes on small buffers; nothing else should set it.
int64_t max_message_bytes_from_env() {
  const char* text = std::getenv("OPCHAIN_MPI_MAX_MESSAGE_BYTES");
  if (!text || !*text) return INT_MAX;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v < 4 || v > INT_MAX)
    throw CommError(std::string("OPCHAIN_MPI_MAX_MESSAGE_BYTES='") + text + "' is not a whole number of bytes in [4, " +
                    std::to_string(INT_MAX) + "]");
  return v;
}

// The pieces of one collective's error message, built only when it fails.
struct CallSite {
  const char* op;
  const std::string& comm_name;
  int rank;
  int size;
  int64_t bytes;

  std::string text() const {
    if (rank < 0) return std::string(op) + " on communicator '" + comm_name + "'";  // before the rank is known
    return std::string(op) + " on communicator '" + comm_name + "' (rank " + std::to_string(rank) + " of " +
           std::to_string(size) + ", " + std::to_string(bytes) + " bytes)";
  }
};

void check(int code, const CallSite& site) {
  if (code == MPI_SUCCESS) return;
  g_abandoned = true;
  throw CommError(site.text() + ": MPI error: " + mpi_error_text(code));
}

constexpr int kSpinTests = 300;
constexpr std::chrono::microseconds kLongestNap{1000};

// Waits for `request` with MPI_Test. Oversubscribed ranks (4 on 2 cores) share the cores with the
// ranks still computing, so after a short spin for the common quick completion it sleeps, longer
// each time up to 1 ms: a waiting rank then costs its peers almost no CPU, and a step pays at most
// about a millisecond of extra latency.
void wait_for(MPI_Request& request, double timeout_seconds, const CallSite& site) {
  using Clock = std::chrono::steady_clock;
  // Past ~30 years the deadline would overflow the clock's int64 nanoseconds; that is no deadline.
  const bool bounded = timeout_seconds > 0 && timeout_seconds < 1e9;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(bounded ? timeout_seconds : 0));
  std::chrono::microseconds nap{1};
  for (int spins = 0;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), site);
    if (done) return;
    if (bounded && Clock::now() >= deadline) {
      g_abandoned = true;
      throw CommError(site.text() + ": no progress within the timeout of " + seconds_text(timeout_seconds) +
                      " (OPCHAIN_COMM_TIMEOUT_S): a peer died, is stuck, or did not call this collective");
    }
    if (spins < kSpinTests) {
      ++spins;
      continue;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, kLongestNap);
  }
}

// A message of `bytes` as (count, datatype). Up to the limit it is that many MPI_BYTEs; past it, one
// element of a derived type: bytes / limit blocks of `limit` bytes, then the rest, resized to an
// extent of exactly `bytes` so that the blocks of a gather or an exchange stay back to back.
class ByteMessage {
 public:
  ByteMessage(int64_t bytes, int64_t limit, const CallSite& site) {
    if (bytes <= limit) {
      count_ = static_cast<int>(bytes);
      return;
    }
    const int64_t blocks = bytes / limit;
    const int64_t rest = bytes % limit;
    if (blocks > INT_MAX) throw CommError(site.text() + ": too large for one MPI message");
    MPI_Datatype block = MPI_DATATYPE_NULL, joined = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(static_cast<int>(limit), MPI_BYTE, &block), site);
    int lengths[2] = {static_cast<int>(blocks), static_cast<int>(rest)};
    MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * limit)};
    MPI_Datatype types[2] = {block, MPI_BYTE};
    check(MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, offsets, types, &joined), site);
    check(MPI_Type_create_resized(joined, 0, static_cast<MPI_Aint>(bytes), &type_), site);
    check(MPI_Type_commit(&type_), site);
    MPI_Type_free(&block);
    MPI_Type_free(&joined);
    count_ = 1;
    owned_ = true;
  }
  ~ByteMessage() {
    // MPI allows freeing a type that a pending request still uses (after a timeout).
    if (owned_ && !mpi_finalized()) MPI_Type_free(&type_);
  }
  ByteMessage(const ByteMessage&) = delete;
  ByteMessage& operator=(const ByteMessage&) = delete;

  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  int count_ = 0;
  MPI_Datatype type_ = MPI_BYTE;
  bool owned_ = false;
};

// Adds the wall time of one collective to the stats however it ends.
class CollectiveClock {
 public:
  explicit CollectiveClock(CommStats& stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {}
  ~CollectiveClock() {
    stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  CollectiveClock(const CollectiveClock&) = delete;
  CollectiveClock& operator=(const CollectiveClock&) = delete;

 private:
  CommStats& stats_;
  std::chrono::steady_clock::time_point start_;
};

// Stats count each collective's logical payload from this rank's side, whatever algorithm MPI runs
// underneath (a ring all-reduce moves other amounts; these are what a model's traffic figures use):
//  - all_reduce_sum of n floats: sent = received = 4n (its vector goes in, the sum comes back);
//  - all_gather and all_to_all of b bytes a block: sent = received = b * (size - 1);
//  - reduce_scatter_sum of c floats a block: sent = received = 4c * (size - 1) (the blocks for the
//    others out, their contributions to this rank's block in);
//  - all_to_all_v: the bytes to and from the other ranks (its own block stays local);
//  - broadcast of b bytes: the root sends b * (size - 1), every other rank receives b;
//  - barrier: no bytes. A communicator of size 1 sends and receives nothing. split() is set-up, not
//    traffic, and is not counted.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::string name, double timeout_seconds, int64_t max_message_bytes)
      : comm_(comm), name_(std::move(name)), max_message_bytes_(max_message_bytes) {
    timeout_seconds_ = timeout_seconds;
    const CallSite site{"open", name_, -1, -1, 0};
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), site);
    check(MPI_Comm_rank(comm_, &rank_), site);
    check(MPI_Comm_size(comm_, &size_), site);
  }
  ~MpiCommunicator() override {
    // Freeing is local in Open MPI, but after a failed collective the communicator may still hold a
    // request that never completes; leave it to the process's end then.
    if (!mpi_finalized() && !g_abandoned.load()) MPI_Comm_free(&comm_);
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }

  void all_reduce_sum(float* data, int64_t count) override {
    const CallSite site = at("all_reduce_sum", count * static_cast<int64_t>(sizeof(float)));
    CollectiveClock clock(stats_);
    // Each element's sum is independent, so a vector past the message limit goes in pieces. A count
    // of 0 still makes one call, keeping every rank's sequence of collectives the same.
    const int64_t piece = max_message_bytes_ / static_cast<int64_t>(sizeof(float));
    int64_t done = 0;
    do {
      const int64_t n = std::min(piece, count - done);
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, data + done, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_, &request), site);
      wait_for(request, timeout_seconds_, site);
      done += n;
    } while (done < count);
    const int64_t payload = size_ > 1 ? site.bytes : 0;
    record(payload, payload);
  }

  void all_gather(const void* send, int64_t bytes, void* recv) override {
    const CallSite site = at("all_gather", bytes);
    require_non_negative(bytes, site);
    CollectiveClock clock(stats_);
    const ByteMessage message(bytes, max_message_bytes_, site);
    MPI_Request request;
    check(MPI_Iallgather(send, message.count(), message.type(), recv, message.count(), message.type(), comm_, &request),
          site);
    wait_for(request, timeout_seconds_, site);
    record(bytes * (size_ - 1), bytes * (size_ - 1));
  }

  void reduce_scatter_sum(const float* send, float* recv, int64_t count) override {
    const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
    const CallSite site = at("reduce_scatter_sum", bytes);
    require_non_negative(count, site);
    // A block past the limit would need a strided derived type per piece; at 2 GiB a block no model
    // step comes near it, so it is refused rather than split.
    if (bytes > max_message_bytes_)
      throw CommError(site.text() + ": a block is larger than the largest MPI message (" +
                      std::to_string(max_message_bytes_) + " bytes); reduce it in smaller pieces");
    CollectiveClock clock(stats_);
    MPI_Request request;
    check(MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_, &request), site);
    wait_for(request, timeout_seconds_, site);
    record(bytes * (size_ - 1), bytes * (size_ - 1));
  }

  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes) override {
    int64_t sent = 0, received = 0;
    for (int p = 0; p < static_cast<int>(send_bytes.size()) && p < static_cast<int>(recv_bytes.size()); ++p) {
      if (p == rank_) continue;
      sent += send_bytes[p];
      received += recv_bytes[p];
    }
    const CallSite site = at("all_to_all_v", sent + received);
    if (send_bytes.size() != static_cast<size_t>(size_) || recv_bytes.size() != static_cast<size_t>(size_))
      throw CommError(site.text() + ": send_bytes has " + std::to_string(send_bytes.size()) +
                      " entries and recv_bytes " + std::to_string(recv_bytes.size()) + "; both need one per rank");
    std::vector<int> send_counts, send_offsets, recv_counts, recv_offsets;
    layout(send_bytes, "send_bytes", site, send_counts, send_offsets);
    layout(recv_bytes, "recv_bytes", site, recv_counts, recv_offsets);
    CollectiveClock clock(stats_);
    MPI_Request request;
    check(MPI_Ialltoallv(send, send_counts.data(), send_offsets.data(), MPI_BYTE, recv, recv_counts.data(),
                         recv_offsets.data(), MPI_BYTE, comm_, &request),
          site);
    wait_for(request, timeout_seconds_, site);
    record(sent, received);
  }

  void all_to_all(const void* send, int64_t bytes, void* recv) override {
    const CallSite site = at("all_to_all", bytes);
    require_non_negative(bytes, site);
    CollectiveClock clock(stats_);
    const ByteMessage message(bytes, max_message_bytes_, site);
    MPI_Request request;
    check(MPI_Ialltoall(send, message.count(), message.type(), recv, message.count(), message.type(), comm_, &request),
          site);
    wait_for(request, timeout_seconds_, site);
    record(bytes * (size_ - 1), bytes * (size_ - 1));
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    const CallSite site = at("broadcast", bytes);
    require_non_negative(bytes, site);
    if (root < 0 || root >= size_)
      throw CommError(site.text() + ": root " + std::to_string(root) + " is not a rank of the communicator");
    CollectiveClock clock(stats_);
    int64_t done = 0;
    do {
      const int64_t n = std::min(max_message_bytes_, bytes - done);
      MPI_Request request;
      check(MPI_Ibcast(static_cast<char*>(data) + done, static_cast<int>(n), MPI_BYTE, root, comm_, &request), site);
      wait_for(request, timeout_seconds_, site);
      done += n;
    } while (done < bytes);
    if (rank_ == root)
      record(bytes * (size_ - 1), 0);
    else
      record(0, bytes);
  }

  void barrier() override {
    const CallSite site = at("barrier", 0);
    CollectiveClock clock(stats_);
    enter_barrier(site);
    record(0, 0);
  }

  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override {
    const CallSite site = at("split", 0);
    if (color < 0)
      throw CommError(site.text() + ": color " + std::to_string(color) + " is negative; every rank needs a group");
    // MPI has no non-blocking split. A barrier with the deadline first means every rank has reached
    // the split, so the blocking MPI_Comm_split after it cannot wait on a missing peer.
    enter_barrier(site);
    MPI_Comm child = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &child), site);
    return std::make_unique<MpiCommunicator>(child, name, timeout_seconds_, max_message_bytes_);
  }

 private:
  CallSite at(const char* op, int64_t bytes) const { return CallSite{op, name_, rank_, size_, bytes}; }

  void record(int64_t sent, int64_t received) {
    ++stats_.collectives;
    if (size_ == 1) return;
    stats_.bytes_sent += sent;
    stats_.bytes_received += received;
  }

  void enter_barrier(const CallSite& site) {
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), site);
    wait_for(request, timeout_seconds_, site);
  }

  static void require_non_negative(int64_t n, const CallSite& site) {
    if (n < 0) throw CommError(site.text() + ": a negative size");
  }

  // MPI_Ialltoallv takes int counts and int offsets: contiguous blocks, each offset the sum of the
  // counts before it, all of them within the message limit.
  void layout(std::span<const int64_t> bytes, const char* what, const CallSite& site, std::vector<int>& counts,
              std::vector<int>& offsets) const {
    counts.resize(bytes.size());
    offsets.resize(bytes.size());
    int64_t offset = 0;
    for (size_t p = 0; p < bytes.size(); ++p) {
      if (bytes[p] < 0)
        throw CommError(site.text() + ": " + what + "[" + std::to_string(p) + "] = " + std::to_string(bytes[p]) +
                        " is negative");
      if (bytes[p] > max_message_bytes_ || offset > max_message_bytes_)
        throw CommError(site.text() + ": " + what + "[" + std::to_string(p) + "] = " + std::to_string(bytes[p]) +
                        " at offset " + std::to_string(offset) + " is past the largest MPI count (" +
                        std::to_string(max_message_bytes_) + " bytes); exchange it in smaller pieces");
      counts[p] = static_cast<int>(bytes[p]);
      offsets[p] = static_cast<int>(offset);
      offset += bytes[p];
    }
  }

  MPI_Comm comm_;
  std::string name_;
  int64_t max_message_bytes_;
  int rank_ = 0;
  int size_ = 1;
};

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

// Collectives may come from an engine thread that is not the one that initialised MPI, one at a
// time: that is MPI_THREAD_SERIALIZED.
void initialise_mpi() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (mpi_finalized()) throw CommError("cannot open the MPI world: MPI was already finalised in this process");
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) throw CommError("MPI_Init_thread failed: " + mpi_error_text(code));
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED)
    throw CommError(std::string("this MPI provides only ") + thread_level_name(provided) +
                    "; opchain needs MPI_THREAD_SERIALIZED (collectives come from an engine thread)");
}

std::unique_ptr<Communicator> open_world(double timeout_seconds) {
  if (!(timeout_seconds >= 0))
    throw CommError("cannot open the MPI world: timeout " + seconds_text(timeout_seconds) + " is negative");
  const int64_t max_message_bytes = max_message_bytes_from_env();
  initialise_mpi();
  static const std::string kName = "world";
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const CallSite site{"open", kName, rank, size, 0};
  // A communicator of its own, so that nothing else using MPI_COMM_WORLD in this process can match
  // its messages; duplicated without blocking so that a rank that never opens is a timeout.
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), site);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request;
  check(MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request), site);
  wait_for(request, timeout_seconds, site);
  return std::make_unique<MpiCommunicator>(comm, kName, timeout_seconds, max_message_bytes);
}

}  // namespace

}  // namespace opchain

extern "C" __attribute__((visibility("default"))) opchain::Communicator* opchain_mpi_open_world(double timeout_seconds,
                                                                                                char* err,
                                                                                                size_t errlen) {
  try {
    return opchain::open_world(timeout_seconds).release();
  } catch (const std::exception& e) {
    if (err && errlen > 0) {
      std::strncpy(err, e.what(), errlen - 1);
      err[errlen - 1] = '\0';
    }
    return nullptr;
  }
}

extern "C" __attribute__((visibility("default"))) void opchain_mpi_abort(int code) {
  opchain::g_abandoned = true;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && !opchain::mpi_finalized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}
