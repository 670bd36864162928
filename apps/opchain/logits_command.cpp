// `opchain logits`: its flags; the prefill and the .npy are tools/logits.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/logits.h"

namespace opchain::cli {

Runner add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Prefill logits for every position as a float32 .npy");
  struct Opts {
    IdsFlags ids;
    tools::LogitsOptions logits;
  };
  auto o = std::make_shared<Opts>();
  add_model_flag(cmd, o->logits.model);
  add_ids_flags(cmd, o->ids)->excludes("--ids-file");
  add_vendor_flag(cmd, o->logits.vendor);
  add_precision_flag(cmd, o->logits.precision);
  add_out_flag(cmd, o->logits.out, false);
  return [o] {
    tools::LogitsOptions logits = o->logits;
    logits.ids = o->ids.parse();
    tools::run_logits(logits, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
