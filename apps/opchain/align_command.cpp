// `opchain align`: its flags; the op-by-op diff itself is tools/align.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/align.h"

namespace opchain::cli {

Runner add_align_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("align", "Run the same steps two ways and diff them op call by op call");
  struct Opts {
    IdsFlags ids;
    tools::AlignOptions align;
  };
  auto o = std::make_shared<Opts>();
  add_model_flag(cmd, o->align.model);
  add_ids_flags(cmd, o->ids);
  add_decode_steps_flag(cmd, o->align.decode_steps);
  cmd->add_option("--compare", o->align.compare,
                  "A:B, B being the oracle: graph:eager (on --vendor), or two vendors such as cpu:reference")
      ->required();
  cmd->add_option("--tol", o->align.tol,
                  "largest max |a-b| / (1 + |b|) of an op's outputs (default 1e-3; 3e-2 in bf16 precision, where "
                  "matmul inputs are rounded to 8-bit mantissas)");
  add_vendor_flag(cmd, o->align.vendor);
  add_precision_flag(cmd, o->align.precision);
  add_block_size_flag(cmd, o->align.block_size);
  return [o] {
    tools::AlignOptions align = o->align;
    align.prompt = o->ids.parse();
    return tools::run_align(align, std::cout) ? 0 : 1;
  };
}

}  // namespace opchain::cli
