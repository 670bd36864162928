#pragma once
// Note [Driver and workers]
// Under mpirun every rank holds its shard of one model (Note [Communicator] in
// backends/communicator.h). Rank 0, the driver, owns the tokenizer, the scheduler and the HTTP server
// and runs ModelRunners as a single process would. Every other rank is a worker: it runs
// run_model_worker(), which mirrors the driver's runners. Each thing a driver runner does that touches
// the model is broadcast on the world communicator first, so every rank takes the same step on its
// shard and meets the same collectives in the same order (vLLM's and lmdeploy's driver/worker split):
//   OpenRunner   a runner over a KV cache of the driver's sizes (the driver's cache id, so that
//                runners sharing a cache on the driver share one on the worker);
//   Forward      one step's sequences: tokens, past lengths, block tables, logits flags, state slots;
//   EnableGraph  capture decode graphs up to a batch size (each rank captures its own);
//   CloseRunner  the driver's runner is gone;
//   TraceBegin   trace every op call from now on (`opchain trace`);
//   TraceEnd     write this rank's calls as Chrome trace events to <path>.rank<R>.json, then a barrier,
//                after which the driver merges them, one lane per rank (ranks share a filesystem);
//   Shutdown     the driver is done; workers return and the process exits 0.
// Block allocation, sampling and stop decisions stay on the driver: workers only see block tables.
// A worker waits for the next command without a timeout (a server may idle for hours); a driver that
// dies ends the job through mpirun, and errors inside a step reach every rank as CommError.
#include <cstdint>
#include <span>
#include <string>

#include "engine/kv_cache.h"
#include "engine/model_runner.h"

namespace opchain {

class Communicator;

// The driver's half: each call broadcasts one command. Only rank 0 of a world larger than 1 makes one.
class WorkerChannel {
 public:
  explicit WorkerChannel(Communicator& world) : world_(world) {}
  int64_t open_runner(const KvCache& cache);
  void forward(int64_t runner, std::span<const SequenceStep> seqs);
  void enable_graph(int64_t runner, int64_t max_batch);
  void close_runner(int64_t runner);
  void trace_begin();
  // Returns when every worker has written `path`.rank<R>.json.
  void trace_end(const std::string& path);
  void shutdown();

 private:
  void send(int64_t command, int64_t runner, const std::vector<int64_t>& payload);
  Communicator& world_;
  int64_t next_runner_ = 1;
};

// The channel of this process's world when it is a driver with workers, else null.
WorkerChannel* worker_channel(const DeviceContext& device);

// The driver is done: every worker returns from run_model_worker. Rank 0 only; nothing when alone.
void shutdown_workers(Communicator& world);

// A worker's loop (rank != 0): mirrors the driver's runners over `model` until Shutdown.
void run_model_worker(const CausalLM& model, const DeviceContext& device);

}  // namespace opchain
