// `opchain trace`: its flags; the traced forward and its report are tools/trace.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/trace.h"

namespace opchain::cli {

Runner add_trace_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("trace", "Run one forward and print the chain every op call crossed");
  struct Opts {
    IdsFlags ids;
    tools::TraceOptions trace;
  };
  auto o = std::make_shared<Opts>();
  add_model_flag(cmd, o->trace.model);
  add_ids_flags(cmd, o->ids);
  add_vendor_flag(cmd, o->trace.vendor);
  add_precision_flag(cmd, o->trace.precision);
  cmd->add_option("--chrome-trace", o->trace.chrome_trace, "write Chrome trace JSON here");
  add_decode_steps_flag(cmd, o->trace.decode_steps);
  cmd->add_option("--batch", o->trace.batch,
                  "run N sequences, prefilled in one step and decoded together (the per-op account of a batched "
                  "decode step); sequence b's ids are the prompt's + b * 7919 modulo the vocabulary, so they route "
                  "to different experts as different requests do")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--warmup", o->trace.warmup,
                  "run the prefill N times untraced first, so the traced run finds the weights paged in and "
                  "the scratch grown (per-op times of a warm run, as bench measures)")
      ->check(at_least(0));
  return [o] {
    tools::TraceOptions trace = o->trace;
    trace.prompt = o->ids.parse();
    tools::run_trace(trace, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
