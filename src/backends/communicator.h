#pragma once
// Layer 3: the collectives that tensor- and expert-parallel impls call between processes.
//
// Note [Communicator]
// One model is spread over the ranks of a world (mpirun -np N); every rank runs the same step on its
// shard. Impls in the backends layer (row-parallel linear, the MoE dispatch/combine, the vocab gather)
// call these collectives; kernels never do, and nothing above layer 3 names MPI. The world and its
// tensor-parallel and expert-parallel groups are each a Communicator (split() makes the groups).
//
// Contract of every collective:
//  - Every rank of the communicator calls it, in the same order, with the same sizes where a size is
//    given per rank. Buffers are host memory and must not overlap unless stated.
//  - It returns when this rank's part is complete, or throws CommError naming the collective, the
//    communicator, the rank and the bytes involved: a peer that died, or no progress within the
//    timeout. After a CommError the world is unusable; the caller reports it and exits non-zero.
//  - stats() counts what this rank sent and received and the time it spent inside collectives, for
//    `opchain trace` and `opchain bench`.
// Implementations: SingleProcessCommunicator (size 1: every collective is a copy or nothing), and
// MPI (src/dist/, a shared library loaded only when the process runs under mpirun, so a single
// process needs no MPI at run time). A CUDA vendor can put NCCL behind the same interface.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/error.h"

namespace opchain {

// A collective that failed: a peer died, sizes disagreed, or it timed out.
class CommError : public Error {
 public:
  using Error::Error;
};

struct CommStats {
  int64_t collectives = 0;
  int64_t bytes_sent = 0;      // this rank's payload handed to the collective
  int64_t bytes_received = 0;  // payload this rank received
  double seconds = 0;          // wall time inside collectives, waiting included
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // e.g. "world", "tp", "ep": used in errors and traces.
  virtual const std::string& name() const = 0;

  // In place: data[i] = sum over ranks of data[i].
  virtual void all_reduce_sum(float* data, int64_t count) = 0;
  // recv holds size() blocks of `bytes` each, rank r's `send` at block r. send may not alias recv.
  virtual void all_gather(const void* send, int64_t bytes, void* recv) = 0;
  // send holds size() blocks of `count` floats; recv[i] = sum over ranks of their block rank()[i].
  virtual void reduce_scatter_sum(const float* send, float* recv, int64_t count) = 0;
  // Rank r sends send_bytes[p] bytes to rank p, from `send` at offset sum(send_bytes[0..p)), and
  // receives recv_bytes[p] bytes from rank p into `recv` at offset sum(recv_bytes[0..p)). Both spans
  // have size() entries; recv_bytes[p] must equal what p sends to r (exchange counts first with
  // all_to_all). Zero-byte pairs are allowed.
  virtual void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                            std::span<const int64_t> recv_bytes) = 0;
  // Fixed-size exchange: block p of `send` (bytes each) goes to rank p, block p of recv comes from p.
  virtual void all_to_all(const void* send, int64_t bytes, void* recv) = 0;
  // Root's `bytes` at data are copied into every other rank's data.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // A group of the ranks that pass the same color, ordered by key (MPI_Comm_split). Collective.
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& name) = 0;

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  // How long one collective may wait for its peers before it throws CommError; 0 waits forever (a
  // worker idle between requests waits for the driver's next step that way).
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double s) { timeout_seconds_ = s; }

 protected:
  CommStats stats_;
  double timeout_seconds_ = 300;
};

// Size 1, rank 0: the communicator of a process that runs alone.
std::unique_ptr<Communicator> make_single_process_communicator(const std::string& name = "world");

}  // namespace opchain
