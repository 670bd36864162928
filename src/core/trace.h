#pragma once
// Op-call tracing. When a Tracer is active, every kernel launch records the five-layer chain it
// crossed (module path, nn module, OpType, backend impl, registry key, vendor kernel), the step
// metadata it read, its tensors and its time. Nested launches (the sub-kernels of a fused op)
// record with depth + 1. Off by default: a launch then costs one pointer test.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace opchain {

// Static facts about one call site, fixed when the nn module builds its impl.
struct TraceSite {
  std::string module_path;  // "model.layers.1.mlp.experts"
  std::string nn_module;    // "FusedMoE"
  std::string impl;         // backend impl, "DefaultFusedMoeImpl"
};

struct TraceEvent {
  std::string module_path, nn_module, op_type, impl, key, vendor, kernel;
  std::string metadata;  // step metadata the call read, "is_decoding=0 comm=local"
  std::string tensors;   // "x=f32[3, 64] weight=bf16[64]"
  double start_us = 0, dur_us = 0;
  int depth = 0;
};

class Tracer {
 public:
  Tracer();
  static Tracer* active();
  static void set_active(Tracer* t);

  // Returns the index of the new event; end() fills its duration.
  size_t begin(TraceEvent e);
  void end(size_t index);
  void set_metadata(size_t index, std::string metadata) { events_[index].metadata = std::move(metadata); }
  int depth() const { return depth_; }
  const std::vector<TraceEvent>& events() const { return events_; }

 private:
  std::vector<TraceEvent> events_;
  std::vector<size_t> open_;  // launches still running, innermost last
  std::chrono::steady_clock::time_point origin_;
  int depth_ = 0;
};

// Chrome trace-event objects ("ph": "X") of `events`, in the lane of process `pid` (one per rank
// under mpirun, Note [Driver and workers] in engine/model_worker.h).
nlohmann::json chrome_trace_events(const std::vector<TraceEvent>& events, int pid);

}  // namespace opchain
