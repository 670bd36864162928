#include "dist/world.h"

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "dist/comm_timeout.h"
#include "dist/mpi_library_loader.h"

namespace opchain {

namespace {

std::string layout_text(const ParallelConfig& c) {
  return "tp " + std::to_string(c.tp) + ", ep " + std::to_string(c.ep);
}

void require_positive(const ParallelConfig& c, int world_size) {
  if (c.tp < 1 || c.ep < 1)
    throw InvalidArgumentError("parallel layout " + layout_text(c) + " on a world of " + std::to_string(world_size) +
                               " processes: tp and ep must be at least 1");
}

// The layout is checked only after every rank's has been gathered: a rank that stopped at a local
// check would leave the others waiting in the gather until the timeout.
void require_same_layout_everywhere(Communicator& world, const ParallelConfig& c) {
  const int32_t mine[2] = {c.tp, c.ep};
  std::vector<int32_t> all(2 * static_cast<size_t>(world.size()));
  world.all_gather(mine, sizeof mine, all.data());
  bool same = true;
  for (int r = 0; r < world.size(); ++r) same = same && all[2 * r] == all[0] && all[2 * r + 1] == all[1];
  if (same) return;
  std::string ranks;
  for (int r = 0; r < world.size(); ++r)
    ranks +=
        std::string(r ? "; " : "") + "rank " + std::to_string(r) + ": " + layout_text({all[2 * r], all[2 * r + 1]});
  throw InvalidArgumentError("the ranks of the world were started with different parallel layouts (" + ranks +
                             "): start every rank with the same --tp and --ep");
}

void require_layout_fits(const ParallelConfig& c, int world_size) {
  require_positive(c, world_size);
  for (const auto& [name, n] : {std::pair<const char*, int>{"tp", c.tp}, {"ep", c.ep}}) {
    if (world_size % n == 0) continue;
    throw InvalidArgumentError("world size " + std::to_string(world_size) + " is not divisible by " + name + " " +
                               std::to_string(n) + " (" + layout_text(c) +
                               "): run a number of processes that both tp and ep divide");
  }
}

}  // namespace

bool launched_under_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

ParallelWorld::ParallelWorld(Token, std::unique_ptr<Communicator> world, std::unique_ptr<Communicator> tp,
                             std::unique_ptr<Communicator> ep, mpi_library::AbortFn mpi_abort)
    : world_(std::move(world)), tp_(std::move(tp)), ep_(std::move(ep)), mpi_abort_(mpi_abort) {}

std::shared_ptr<ParallelWorld> ParallelWorld::single(const ParallelConfig& c) {
  require_positive(c, 1);
  if (c.tp > 1 || c.ep > 1) {
    std::string options;
    if (c.tp > 1) options += "--tp " + std::to_string(c.tp);
    if (c.ep > 1) options += std::string(options.empty() ? "" : " ") + "--ep " + std::to_string(c.ep);
    const std::string processes = std::to_string(std::lcm(c.tp, c.ep));
    throw InvalidArgumentError(options + " needs " + processes + " processes: run under mpirun -np " + processes);
  }
  return std::make_shared<ParallelWorld>(Token{}, make_single_process_communicator("world"),
                                         make_single_process_communicator("tp"), make_single_process_communicator("ep"),
                                         nullptr);
}

std::shared_ptr<ParallelWorld> ParallelWorld::open(const ParallelConfig& c) {
  if (!launched_under_mpirun()) return single(c);
  const double timeout_seconds = comm_timeout_seconds_from_env();
  const MpiLibrary& library = loaded_mpi_library();
  char err[1024] = {};
  std::unique_ptr<Communicator> world(library.open_world(timeout_seconds, err, sizeof err));
  if (!world) throw CommError(std::string(err) + " (in " + library.path + ")");
  require_same_layout_everywhere(*world, c);
  require_layout_fits(c, world->size());
  const int rank = world->rank();
  auto tp = world->split(rank / c.tp, rank % c.tp, "tp");
  auto ep = world->split(rank / c.ep, rank % c.ep, "ep");
  world->reset_stats();  // the layout check is set-up, not a step's traffic
  return std::make_shared<ParallelWorld>(Token{}, std::move(world), std::move(tp), std::move(ep), library.abort);
}

CommStats ParallelWorld::stats() const {
  CommStats sum;
  for (const Communicator* comm : {world_.get(), tp_.get(), ep_.get()}) {
    const CommStats& s = comm->stats();
    sum.collectives += s.collectives;
    sum.bytes_sent += s.bytes_sent;
    sum.bytes_received += s.bytes_received;
    sum.seconds += s.seconds;
  }
  return sum;
}

void ParallelWorld::reset_stats() {
  world_->reset_stats();
  tp_->reset_stats();
  ep_->reset_stats();
}

void ParallelWorld::abort(int code, const std::string& message) {
  std::fprintf(stderr, "opchain: rank %d/%d: %s\n", rank(), size(), message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  if (mpi_abort_) mpi_abort_(code);
  // _Exit, not exit: engine threads may still be running, and static destructors would race them.
  std::_Exit(code);
}

}  // namespace opchain
