// `opchain align`: its flags; the op-by-op diff itself is tools/align.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/precision_flag.h"
#include "core/error.h"
#include "tools/align.h"

namespace opchain::cli {

Runner add_align_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("align", "Run the same steps two ways and diff them op call by op call");
  struct Opts {
    std::string ids, ids_file, precision = "auto";
    tools::AlignOptions align;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->align.model, "Hugging Face model directory")->required();
  cmd->add_option("--ids", o->ids, "comma-separated prompt token ids");
  cmd->add_option("--ids-file", o->ids_file, "file of prompt token ids");
  cmd->add_option("--decode-steps", o->align.decode_steps, "greedy decode steps after the prefill (default 4)");
  cmd->add_option("--compare", o->align.compare,
                  "A:B, B being the oracle: graph:eager, or two vendors such as cpu:reference")
      ->required();
  cmd->add_option("--tol", o->align.tol,
                  "largest max |a-b| / (1 + |b|) of an op's outputs (default 1e-3; 3e-2 in bf16 precision, where "
                  "matmul inputs are rounded to 8-bit mantissas)");
  cmd->add_option("--vendor", o->align.vendor, "vendor of graph:eager (default cpu)");
  add_precision_flag(cmd, o->precision);
  cmd->add_option("--block-size", o->align.block_size, "KV cache block size (default 16)");
  return [o] {
    if (o->ids.empty() && o->ids_file.empty()) throw InvalidArgumentError("give --ids or --ids-file");
    tools::AlignOptions align = o->align;
    align.prompt = parse_ids(o->ids, o->ids_file);
    align.precision = precision_choice(o->precision);
    return tools::run_align(align, std::cout) ? 0 : 1;
  };
}

}  // namespace opchain::cli
