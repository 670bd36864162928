// `opchain bench`: its flags; the benchmark drivers are tools/bench.h and tools/grammar_bench.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/bench.h"
#include "tools/grammar_bench.h"

namespace opchain::cli {

Runner add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Prefill and decode throughput against the measured memory bandwidth");
  struct Opts {
    std::string json_schema;  // set: the grammar-mask micro-benchmark instead of the model's throughput
    tools::BenchOptions bench;
  };
  auto o = std::make_shared<Opts>();
  add_model_flag(cmd, o->bench.model);
  add_threads_flag(cmd, o->bench.threads);
  cmd->add_option("--prompt-lens", o->bench.prompt_lens, "prefill prompt lengths, comma-separated")->delimiter(',');
  cmd->add_option("--gen", o->bench.gen, "timed decode steps per repetition");
  cmd->add_option("--batches", o->bench.batches, "decode batch sizes, comma-separated")->delimiter(',');
  cmd->add_option("--depth", o->bench.depth, "tokens already cached per sequence when decode starts");
  cmd->add_option("--reps", o->bench.reps, "repetitions of each measurement");
  add_vendor_flag(cmd, o->bench.vendor);
  add_precision_flag(cmd, o->bench.precision);
  cmd->add_option("--bandwidth-mib", o->bench.bandwidth_mib,
                  "buffer read by the bandwidth measurement (keep it >> last-level cache)");
  add_decode_mode_flags(cmd, &o->bench.graph, o->bench.eager);
  add_json_flag(cmd, o->bench.json);
  add_json_schema_flag(cmd, o->json_schema);
  return [o] {
    if (!o->json_schema.empty()) {
      tools::run_grammar_bench({o->bench.model, o->json_schema, o->bench.reps, o->bench.json}, std::cout);
      return 0;
    }
    tools::run_bench(o->bench, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
