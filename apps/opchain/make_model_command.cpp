// `opchain make-model`: its flags; the writing is tools/make_model.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "engine/random_model.h"
#include "tools/default_tokenizer.h"
#include "tools/make_model.h"

namespace opchain::cli {

Runner add_make_model_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("make-model", "Write a random-weight Hugging Face model directory of a preset architecture");
  auto o = std::make_shared<tools::MakeModelOptions>();
  std::string preset_help = "architecture preset:";
  for (const auto& p : random_model_presets()) preset_help += " " + p;
  cmd->add_option("--preset", o->preset, preset_help)->required();
  cmd->add_option("--layers", o->layers, "decoder layers (default: the preset's full depth)");
  cmd->add_option("--dtype", o->dtype, "weight dtype: bf16 or f32");
  add_seed_flag(cmd, o->seed);
  add_out_flag(cmd, o->out, true);
  cmd->add_option("--tokenizer-dir", o->tokenizer_dir,
                  std::string("directory with tokenizer.json and tokenizer_config.json (default: ") +
                      tools::kDefaultTokenizerSubdir + " under the current directory or a parent of the executable)");
  add_shard_size_flag(cmd, o->shard_size_mb);
  add_quant_flags(cmd, o->quant, "--quantize", false);
  return [o] {
    tools::run_make_model(*o, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
