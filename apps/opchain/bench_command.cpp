// `opchain bench`: its flags; the benchmark drivers are tools/bench.h and tools/grammar_bench.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/precision_flag.h"
#include "tools/bench.h"
#include "tools/grammar_bench.h"

namespace opchain::cli {

Runner add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Prefill and decode throughput against the measured memory bandwidth");
  struct Opts {
    std::string precision = "auto";
    std::string json_schema;  // set: the grammar-mask micro-benchmark instead of the model's throughput
    tools::BenchOptions bench;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->bench.model, "Hugging Face model directory")->required();
  cmd->add_option("--threads", o->bench.threads, "kernel threads (default: all cores)");
  cmd->add_option("--prompt-lens", o->bench.prompt_lens, "prefill prompt lengths, comma-separated")->delimiter(',');
  cmd->add_option("--gen", o->bench.gen, "timed decode steps per repetition");
  cmd->add_option("--batches", o->bench.batches, "decode batch sizes, comma-separated")->delimiter(',');
  cmd->add_option("--depth", o->bench.depth, "tokens already cached per sequence when decode starts");
  cmd->add_option("--reps", o->bench.reps, "repetitions of each measurement");
  cmd->add_option("--vendor", o->bench.vendor, "kernel vendor: cpu or reference");
  add_precision_flag(cmd, o->precision);
  cmd->add_option("--bandwidth-mib", o->bench.bandwidth_mib,
                  "buffer read by the bandwidth measurement (keep it >> last-level cache)");
  auto* graph =
      cmd->add_flag("--graph", o->bench.graph, "decode replayed from captured graphs only (default: eager and graph)");
  auto* eager = cmd->add_flag("--eager", o->bench.eager, "eager decode only (default: eager and graph)");
  graph->excludes(eager);
  cmd->add_flag("--json", o->bench.json, "print one JSON object on stdout");
  cmd->add_option(
      "--json-schema", o->json_schema,
      "instead: time the structured-output token mask per token for this JSON Schema over the model's vocabulary");
  return [o] {
    if (!o->json_schema.empty()) {
      tools::run_grammar_bench({o->bench.model, o->json_schema, o->bench.reps, o->bench.json}, std::cout);
      return 0;
    }
    tools::BenchOptions bench = o->bench;
    bench.precision = precision_choice(o->precision);
    tools::run_bench(bench, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
