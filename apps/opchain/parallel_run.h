#pragma once
// --tp, --ep and --moe-comm on the commands that run a model, and what a rank does with them under
// mpirun (Note [Driver and workers] in engine/model_worker.h): rank 0 runs the command, every other
// rank loads its shard and serves the driver's steps until the driver is done.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace opchain::cli {

struct ParallelFlags {
  int tp = 1, ep = 1;
  std::string moe_comm = "auto";
};

void add_parallel_flags(CLI::App* cmd, ParallelFlags& flags);

// Runs `command` as this rank's part of the world the flags describe: alone when not under mpirun
// (with --tp/--ep 1), as the driver on rank 0, as a worker elsewhere. Returns the exit code. An
// error on any rank of a multi-rank world ends every rank (non-zero), so that none waits forever.
int run_as_rank(CLI::App* cmd, const ParallelFlags& flags, const std::function<int()>& command);

}  // namespace opchain::cli
