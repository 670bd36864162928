#pragma once
// The tracer behind `opchain trace`: one forward with tracing on; prints each op call's five-layer chain in order and,
// with --chrome-trace, writes Chrome trace-event JSON (chrome://tracing, Perfetto). With --batch N the prompt
// runs as N distinct sequences and each decode step decodes all N, so the per-op account of a batched decode step
// (where bench's batch figures spend their time) can be read off the decode summary.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/loaded_model.h"

namespace opchain::tools {

struct TraceOptions {
  std::string model;            // Hugging Face model directory
  std::vector<int32_t> prompt;  // token ids of the traced prefill
  std::string vendor = "cpu";   // kernel vendor
  PrecisionChoice precision = PrecisionChoice::Auto;
  int batch = 1;             // sequences prefilled in one step and decoded together (b > 0: ids + b * 7919, mod vocab)
  int decode_steps = 0;      // greedy decode steps traced after the prefill
  int warmup = 0;            // untraced prefills first, so the traced run finds the weights paged in
  std::string chrome_trace;  // non-empty: write Chrome trace-event JSON here
};

// Writes each op call's chain and the per-op time summaries (all traced calls; with decode steps, also the
// decode steps alone, per step) to `out`; "wrote FILE" to `log`. Throws InvalidArgumentError for a batch outside [1,
// 1024].
void run_trace(const TraceOptions& o, std::ostream& out, std::ostream& log);

}  // namespace opchain::tools
