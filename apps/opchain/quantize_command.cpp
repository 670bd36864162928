// `opchain quantize`: its flags; the rewriting is tools/quantize.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/quantize.h"

namespace opchain::cli {

Runner add_quantize_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("quantize", "Write a dense model's linear layers in a quantised format (round to nearest)");
  auto o = std::make_shared<tools::QuantizeOptions>();
  add_model_flag(cmd, o->model);
  add_out_flag(cmd, o->out, true);
  add_quant_flags(cmd, o->quant, "--format", true);
  add_shard_size_flag(cmd, o->shard_size_mb);
  return [o] {
    tools::run_quantize(*o, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
