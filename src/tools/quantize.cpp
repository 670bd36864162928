#include "tools/quantize.h"

#include <iomanip>

#include "core/error.h"
#include "engine/quantize_model.h"
#include "io/safetensors.h"

namespace opchain::tools {

void run_quantize(const QuantizeOptions& o, std::ostream& log) {
  if (o.shard_size_mb <= 0) throw InvalidArgumentError("--shard-size-mb must be positive");
  QuantizeModelOptions opts;
  opts.model_dir = o.model;
  opts.out_dir = o.out;
  opts.format = quant_format_options(o.quant, WeightStore(o.model).dominant_dtype());
  opts.max_shard_bytes = static_cast<size_t>(o.shard_size_mb) << 20;
  const QuantizeModelResult r = quantize_model(opts);
  log << "wrote " << o.out << ": " << r.weights.quantized_layers << " linear layers as " << o.quant.format << ", "
      << r.weights.dense_modules.size() << " left dense, "
      << (r.weights.untied_lm_head ? "lm_head quantised from the tied embedding (config untied), " : "") << std::fixed
      << std::setprecision(2) << static_cast<double>(r.weights.written.total_bytes) / 1e9 << " GB in "
      << r.weights.written.files.size() << " file" << (r.weights.written.files.size() == 1 ? "" : "s") << ", "
      << std::setprecision(1) << r.seconds << " s\n";
}

}  // namespace opchain::tools
