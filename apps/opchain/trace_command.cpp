// `opchain trace`: its flags; the traced forward and its report are tools/trace.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/precision_flag.h"
#include "core/error.h"
#include "tools/trace.h"

namespace opchain::cli {

Runner add_trace_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("trace", "Run one forward and print the chain every op call crossed");
  struct Opts {
    std::string ids, ids_file, precision = "auto";
    tools::TraceOptions trace;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->trace.model, "Hugging Face model directory")->required();
  cmd->add_option("--ids", o->ids, "comma-separated token ids");
  cmd->add_option("--ids-file", o->ids_file, "file of token ids");
  cmd->add_option("--vendor", o->trace.vendor, "kernel vendor");
  add_precision_flag(cmd, o->precision);
  cmd->add_option("--chrome-trace", o->trace.chrome_trace, "write Chrome trace JSON here");
  cmd->add_option("--decode-steps", o->trace.decode_steps, "also trace N greedy decode steps after the prefill");
  cmd->add_option("--warmup", o->trace.warmup,
                  "run the prefill N times untraced first, so the traced run finds the weights paged in and "
                  "the scratch grown (per-op times of a warm run, as bench measures)")
      ->check(CLI::NonNegativeNumber);
  return [o] {
    if (o->ids.empty() && o->ids_file.empty()) throw InvalidArgumentError("give --ids or --ids-file");
    tools::TraceOptions trace = o->trace;
    trace.prompt = parse_ids(o->ids, o->ids_file);
    trace.precision = precision_choice(o->precision);
    tools::run_trace(trace, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
