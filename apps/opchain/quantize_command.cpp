// `opchain quantize`: a dense Hugging Face model rewritten in a published quantised format
// (engine/quantize_model.h).
#include <iomanip>
#include <iostream>

#include "apps/opchain/commands.h"
#include "apps/opchain/quant_flags.h"
#include "engine/quantize_model.h"
#include "io/safetensors.h"

namespace opchain::cli {

Runner add_quantize_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("quantize", "Write a dense model's linear layers in a quantised format (round to nearest)");
  struct Opts {
    std::string model, out;
    QuantFlags quant;
    int64_t shard_size_mb = 4096;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "dense Hugging Face model directory")->required();
  cmd->add_option("--out", o->out, "output model directory (created if missing)")->required();
  add_quant_flags(cmd, o->quant, "--format", true);
  cmd->add_option("--shard-size-mb", o->shard_size_mb, "split the weights into shards of at most this many MiB")
      ->capture_default_str();
  return [o] {
    if (o->shard_size_mb <= 0) throw InvalidArgumentError("--shard-size-mb must be positive");
    QuantizeModelOptions opts;
    opts.model_dir = o->model;
    opts.out_dir = o->out;
    opts.format = quant_options(o->quant, WeightStore(o->model).dominant_dtype());
    opts.max_shard_bytes = static_cast<size_t>(o->shard_size_mb) << 20;
    const QuantizeModelResult r = quantize_model(opts);
    std::cerr << "wrote " << o->out << ": " << r.weights.quantized_layers << " linear layers as " << o->quant.format
              << ", " << r.weights.dense_modules.size() << " left dense, " << std::fixed << std::setprecision(2)
              << static_cast<double>(r.weights.written.total_bytes) / 1e9 << " GB in " << r.weights.written.files.size()
              << " file" << (r.weights.written.files.size() == 1 ? "" : "s") << ", " << std::setprecision(1)
              << r.seconds << " s\n";
    return 0;
  };
}

}  // namespace opchain::cli
