#pragma once
// `opchain logits`: one prefill's logits at every position, written as a float32 .npy [n_ids, vocab],
// the figure a reference implementation's logits are compared against.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/loaded_model.h"

namespace opchain::tools {

struct LogitsOptions {
  std::string model;           // Hugging Face model directory
  std::vector<int32_t> ids;    // the prompt
  std::string vendor = "cpu";  // kernel vendor
  PrecisionChoice precision = PrecisionChoice::Auto;
  std::string out = "logits.npy";
};

// Runs the prefill, writes `out` and says so on `log`.
void run_logits(const LogitsOptions& o, std::ostream& log);

}  // namespace opchain::tools
