// `opchain make-model`: a random-weight Hugging Face model directory of a real architecture, for
// benchmarks and loader tests (see engine/random_model.h).
#include <iomanip>
#include <iostream>

#include "apps/opchain/commands.h"
#include "apps/opchain/quant_flags.h"
#include "core/error.h"
#include "engine/random_model.h"
#include "tools/default_tokenizer.h"

namespace opchain::cli {

Runner add_make_model_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("make-model", "Write a random-weight Hugging Face model directory of a preset architecture");
  struct Opts {
    std::string preset, dtype = "bf16", out, tokenizer_dir;
    int64_t layers = 0;
    uint64_t seed = 0;
    int64_t shard_size_mb = 0;
    QuantFlags quant;
  };
  auto o = std::make_shared<Opts>();
  std::string preset_help = "architecture preset:";
  for (const auto& p : random_model_presets()) preset_help += " " + p;
  cmd->add_option("--preset", o->preset, preset_help)->required();
  auto* layers = cmd->add_option("--layers", o->layers, "decoder layers (default: the preset's full depth)");
  cmd->add_option("--dtype", o->dtype, "weight dtype: bf16 or f32");
  cmd->add_option("--seed", o->seed, "random seed; a tensor's values depend only on the seed and its name");
  cmd->add_option("--out", o->out, "output model directory (created if missing)")->required();
  cmd->add_option("--tokenizer-dir", o->tokenizer_dir,
                  std::string("directory with tokenizer.json and tokenizer_config.json (default: ") +
                      tools::kDefaultTokenizerSubdir + " under the current directory or a parent of the executable)");
  cmd->add_option(
      "--shard-size-mb", o->shard_size_mb,
      "split the weights into shards of at most this many MiB (default: 4096, as transformers shards large models)");
  add_quant_flags(cmd, o->quant, "--quantize", false);
  return [o, layers] {
    RandomModelOptions opts;
    opts.preset = o->preset;
    if (layers->count() > 0 && o->layers <= 0)
      throw InvalidArgumentError("--layers must be positive, got " + std::to_string(o->layers));
    opts.layers = o->layers;
    if (o->dtype == "bf16")
      opts.dtype = DType::BF16;
    else if (o->dtype == "f32")
      opts.dtype = DType::F32;
    else
      throw InvalidArgumentError("--dtype must be bf16 or f32, got '" + o->dtype + "'");
    opts.seed = o->seed;
    opts.out_dir = o->out;
    if (o->shard_size_mb < 0) throw InvalidArgumentError("--shard-size-mb must be positive");
    if (o->shard_size_mb > 0) opts.max_shard_bytes = static_cast<size_t>(o->shard_size_mb) << 20;
    // Check the preset before searching for the tokenizer, so a typo gets the more useful error.
    (void)random_model_config_json(o->preset, o->layers, opts.dtype);
    if (!o->quant.format.empty()) opts.quantize = quant_options(o->quant, opts.dtype);
    opts.tokenizer_dir = o->tokenizer_dir.empty() ? tools::find_default_tokenizer_dir() : o->tokenizer_dir;
    const RandomModelResult r = write_random_model(opts);
    std::cerr << "wrote " << o->out << ": " << o->preset << ", " << r.parameters << " parameters, " << std::fixed
              << std::setprecision(2) << static_cast<double>(r.weight_bytes) / 1e9 << " GB of "
              << (o->quant.format.empty()
                      ? o->dtype
                      : o->quant.format + " (" + std::to_string(r.quantized_layers) + " linear layers quantised, " +
                            std::to_string(r.dense_layers) + " dense)")
              << " in " << r.weight_files.size() << " file" << (r.weight_files.size() == 1 ? "" : "s") << ", "
              << std::setprecision(1) << r.seconds << " s\n";
    return 0;
  };
}

}  // namespace opchain::cli
