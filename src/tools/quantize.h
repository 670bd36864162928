#pragma once
// `opchain quantize`: a dense Hugging Face model rewritten in a published quantised format, rounding
// to nearest (engine/quantize_model.h).
#include <cstdint>
#include <ostream>
#include <string>

#include "tools/quant_spec.h"

namespace opchain::tools {

struct QuantizeOptions {
  std::string model;  // the dense model directory
  std::string out;    // created if missing
  QuantSpec quant;
  int64_t shard_size_mb = 4096;
};

// Writes the quantised directory and one summary line on `log`. Bad options throw InvalidArgumentError.
void run_quantize(const QuantizeOptions& o, std::ostream& log);

}  // namespace opchain::tools
