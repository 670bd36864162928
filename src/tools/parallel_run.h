#pragma once
// What a rank does under mpirun (Note [Driver and workers] in engine/model_worker.h): rank 0 runs the
// command, every other rank loads its shard and serves the driver's steps until the driver is done.
#include <functional>
#include <string>

#include "engine/loaded_model.h"

namespace opchain::tools {

struct ParallelOptions {
  int tp = 1;                     // tensor-parallel ranks per model replica
  int ep = 1;                     // expert-parallel ranks the experts are split over
  std::string moe_comm = "auto";  // auto, allgather or alltoall
};

// The model a worker rank loads: the one the driver's command names.
struct WorkerModel {
  std::string model;
  std::string vendor = "cpu";
  PrecisionChoice precision = PrecisionChoice::Auto;
};

// Runs `command` as this rank's part of the world the options describe: alone when not under mpirun
// (with tp and ep 1), as the driver on rank 0, as a worker elsewhere. Returns the exit code. An
// error on any rank of a multi-rank world ends every rank (non-zero), so that none waits forever.
int run_as_rank(const ParallelOptions& options, const WorkerModel& worker, const std::function<int()>& command);

}  // namespace opchain::tools
