#include "tools/make_model.h"

#include <iomanip>

#include "core/error.h"
#include "engine/random_model.h"
#include "tools/default_tokenizer.h"

namespace opchain::tools {

void run_make_model(const MakeModelOptions& o, std::ostream& log) {
  RandomModelOptions opts;
  opts.preset = o.preset;
  if (o.layers && *o.layers <= 0)
    throw InvalidArgumentError("--layers must be positive, got " + std::to_string(*o.layers));
  opts.layers = o.layers.value_or(0);
  if (o.dtype == "bf16")
    opts.dtype = DType::BF16;
  else if (o.dtype == "f32")
    opts.dtype = DType::F32;
  else
    throw InvalidArgumentError("--dtype must be bf16 or f32, got '" + o.dtype + "'");
  opts.seed = o.seed;
  opts.out_dir = o.out;
  if (o.shard_size_mb < 0) throw InvalidArgumentError("--shard-size-mb must be positive");
  if (o.shard_size_mb > 0) opts.max_shard_bytes = static_cast<size_t>(o.shard_size_mb) << 20;
  // Check the preset before searching for the tokenizer, so a typo gets the more useful error.
  (void)random_model_config_json(o.preset, opts.layers, opts.dtype);
  if (!o.quant.format.empty()) opts.quantize = quant_format_options(o.quant, opts.dtype);
  opts.tokenizer_dir = o.tokenizer_dir.empty() ? find_default_tokenizer_dir() : o.tokenizer_dir;
  const RandomModelResult r = write_random_model(opts);
  log << "wrote " << o.out << ": " << o.preset << ", " << r.parameters << " parameters, " << std::fixed
      << std::setprecision(2) << static_cast<double>(r.weight_bytes) / 1e9 << " GB of "
      << (o.quant.format.empty() ? o.dtype
                                 : o.quant.format + " (" + std::to_string(r.quantized_layers) +
                                       " linear layers quantised, " + std::to_string(r.dense_layers) + " dense)")
      << " in " << r.weight_files.size() << " file" << (r.weight_files.size() == 1 ? "" : "s") << ", "
      << std::setprecision(1) << r.seconds << " s\n";
}

}  // namespace opchain::tools
