#include "tools/parallel_run.h"

#include <pthread.h>
#include <algorithm>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "core/thread_pool.h"
#include "dist/world.h"
#include "engine/loaded_model.h"
#include "engine/model_worker.h"

namespace opchain::tools {

namespace {

// Ranks that share a machine share its cores: unless OPCHAIN_THREADS says otherwise, each takes its
// share, so that an oversubscribed world does not run cores x ranks threads.
void share_cores() {
  if (std::getenv("OPCHAIN_THREADS")) return;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks = local ? std::max(1, std::atoi(local)) : 1;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool::set_global_threads(std::max(1, cores / ranks));
}

}  // namespace

int run_as_rank(const ParallelOptions& f, const WorkerModel& worker, const std::function<int()>& command) {
  if (!launched_under_mpirun() && f.tp == 1 && f.ep == 1) return command();
  // Open MPI starts threads of its own; opened with SIGINT and SIGTERM blocked, they inherit the mask
  // and leave both signals to this thread, so that `serve` drains on them as it does alone (its
  // sigwait thread) instead of dying in whichever thread the kernel picked.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  std::shared_ptr<ParallelWorld> world = ParallelWorld::open({f.tp, f.ep});
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (world->size() == 1) return command();
  share_cores();
  ParallelPlacement p;
  p.world = &world->world();
  p.tp = &world->tp();
  p.ep = &world->ep();
  p.tp_rank = world->tp_rank();
  p.tp_size = world->tp_size();
  p.ep_rank = world->ep_rank();
  p.ep_size = world->ep_size();
  if (f.moe_comm == "allgather") p.moe_comm = MoeCommType::AllGather;
  if (f.moe_comm == "alltoall") p.moe_comm = MoeCommType::AllToAll;
  set_process_placement(p);
  try {
    if (world->is_driver()) {
      const int rc = command();
      shutdown_workers(world->world());
      return rc;
    }
    // mpirun passes SIGTERM and SIGINT to every rank; the driver drains and then releases the workers
    // (Shutdown), so a worker must outlive the signal rather than die under the driver's last step.
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    LoadedModel m = load_model(worker.model, worker.vendor, {}, worker.precision);
    run_model_worker(*m.model, m.device);
    return 0;
  } catch (const Error& e) {
    world->abort(1, std::string("error: ") + e.what());
  } catch (const std::exception& e) {
    world->abort(2, std::string("internal error: ") + e.what());
  }
}

}  // namespace opchain::tools
