#pragma once
// The op-by-op diff behind `opchain align`: runs the same steps two ways (graph replay against eager,
// or one vendor against another) and diffs them op call by op call, so a mismatch is pinned to the
// first op that made it. The second side of `compare` is the oracle, and its greedy token feeds
// both sides, so they stay on the same inputs.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/loaded_model.h"

namespace opchain::tools {

struct AlignOptions {
  std::string model;            // Hugging Face model directory
  std::vector<int32_t> prompt;  // prompt token ids
  std::string compare;          // "A:B", B being the oracle: graph:eager, or two vendors such as cpu:reference
  std::string vendor = "cpu";   // the vendor of graph:eager
  PrecisionChoice precision = PrecisionChoice::Auto;
  int decode_steps = 4;       // greedy decode steps after the prefill
  std::optional<double> tol;  // largest max |a-b| / (1 + |b|); default 1e-3, or 3e-2 when matmuls run in bf16
  int64_t block_size = 16;    // KV cache block size
};

// Writes the per-op-call table to `out` and, at the first op call over tolerance, where the two sides
// parted. Returns whether every op call agreed. Bad options throw InvalidArgumentError.
bool run_align(const AlignOptions& o, std::ostream& out);

}  // namespace opchain::tools
