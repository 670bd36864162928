#pragma once
// The processes one model is spread over and its tensor- and expert-parallel groups, each a
// Communicator (Note [Communicator]). A process alone is a world of size 1; under mpirun the world
// is MPI's, loaded at run time from libopchain_mpi.so (Note [MPI library] in dist/mpi_library.h).
#include <memory>
#include <string>

#include "backends/communicator.h"
#include "dist/mpi_library.h"

namespace opchain {

// How the ranks of the world are grouped: tp ranks share each layer's weights (tensor parallel), ep
// ranks share the experts (expert parallel). The world size must be a multiple of each.
struct ParallelConfig {
  int tp = 1;
  int ep = 1;
};

// True when this process was started by mpirun/mpiexec (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE set).
bool launched_under_mpirun();

class ParallelWorld {
  struct Token {};  // lets only the factories below construct one, through make_shared

 public:
  // A process alone: size 1, every group the single-process communicator. tp or ep above 1 is an
  // InvalidArgumentError saying how many processes they need.
  static std::shared_ptr<ParallelWorld> single(const ParallelConfig& c = {});
  // Under mpirun: loads libopchain_mpi.so (OPCHAIN_MPI_LIBRARY, else the build tree's, else the
  // installed one, else the bare name), opens MPI_COMM_WORLD with the timeout of
  // OPCHAIN_COMM_TIMEOUT_S (default 300 s), checks that every rank was given the same tp and ep and
  // that both divide the world size (else InvalidArgumentError on every rank), and splits the groups:
  // the tp group is the ranks with equal rank / tp, ordered by rank % tp; the ep group the ranks with
  // equal rank / ep, ordered by rank % ep. Collective over the world. Stats start at zero.
  // Not under mpirun: single(c).
  static std::shared_ptr<ParallelWorld> open(const ParallelConfig& c);

  ParallelWorld(Token, std::unique_ptr<Communicator> world, std::unique_ptr<Communicator> tp,
                std::unique_ptr<Communicator> ep, mpi_library::AbortFn mpi_abort);

  Communicator& world() { return *world_; }
  Communicator& tp() { return *tp_; }
  Communicator& ep() { return *ep_; }
  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  // Rank 0 reads requests and writes output; the others follow its steps.
  bool is_driver() const { return rank() == 0; }
  int tp_rank() const { return tp_->rank(); }
  int tp_size() const { return tp_->size(); }
  int ep_rank() const { return ep_->rank(); }
  int ep_size() const { return ep_->size(); }

  // Sum of stats over world, tp and ep of this rank.
  CommStats stats() const;
  void reset_stats();

  // Prints "opchain: rank R/N: <message>" to stderr and ends every rank with `code` (MPI_Abort); a
  // single process just exits. Used after a CommError, which leaves the world unusable.
  [[noreturn]] void abort(int code, const std::string& message);

 private:
  // world_ first: the groups were split from it and go before it.
  std::unique_ptr<Communicator> world_;
  std::unique_ptr<Communicator> tp_;
  std::unique_ptr<Communicator> ep_;
  mpi_library::AbortFn mpi_abort_;  // null for a single process
};

}  // namespace opchain
