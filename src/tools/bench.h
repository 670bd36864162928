#pragma once
// `opchain bench`: prefill and decode throughput of a model through ModelRunner, set against the
// memory read bandwidth measured in the same process, so a decode figure reads as a share of what the
// memory system allows. Decode runs eager, replayed from captured graphs, or both (the default), and
// each reports its host time: the step's wall time minus the time inside its kernels.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/loaded_model.h"

namespace opchain::tools {

struct BenchOptions {
  std::string model;           // Hugging Face model directory
  std::string vendor = "cpu";  // kernel vendor
  PrecisionChoice precision = PrecisionChoice::Auto;
  int threads = 0;                             // kernel threads; 0: all cores
  std::vector<int64_t> prompt_lens{128, 512};  // prefill prompt lengths
  int64_t gen = 64;                            // timed decode steps per repetition
  int64_t depth = 512;                         // tokens already cached per sequence when decode starts
  std::vector<int64_t> batches{1, 8, 32};      // decode batch sizes
  int reps = 3;                                // repetitions of each measurement
  int64_t bandwidth_mib = 1024;                // buffer read by the bandwidth measurement (keep it >> last-level cache)
  bool graph = false;                          // decode replayed from captured graphs only (default: eager and graph)
  bool eager = false;                          // eager decode only
  bool json = false;                           // one JSON object instead of the tables; no progress lines
};

// Measures and writes the report (or the JSON object) to `out`, progress lines to `log`. Bad options
// throw InvalidArgumentError.
void run_bench(const BenchOptions& o, std::ostream& out, std::ostream& log);

}  // namespace opchain::tools
