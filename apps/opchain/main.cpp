// opchain: the command-line front end. Every library error becomes one line on stderr and exit 1.
#include <iostream>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "core/error.h"
#include "vendors/builtin_vendors.h"
#include "vendors/plugin_loader.h"

namespace {

// The model the worker ranks load: the one the chosen command's flags name.
opchain::tools::WorkerModel worker_model(CLI::App* cmd) {
  auto value = [cmd](const std::string& name, const std::string& fallback) {
    const CLI::Option* o = cmd->get_option_no_throw(name);
    if (!o) return fallback;
    if (o->count() > 0) return o->as<std::string>();
    return o->get_default_str().empty() ? fallback : o->get_default_str();
  };
  return {value("--model", ""), value("--vendor", "cpu"),
          opchain::parse_precision_choice(value("--precision", "auto")).value_or(opchain::PrecisionChoice::Auto)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opchain: an inference engine for Mixture-of-Experts LLMs"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, opchain::cli::Runner>> commands;
  for (auto add : {opchain::cli::add_logits_command, opchain::cli::add_ops_command, opchain::cli::add_trace_command,
                   opchain::cli::add_generate_command, opchain::cli::add_chat_command,
                   opchain::cli::add_tokenize_command, opchain::cli::add_chat_template_command,
                   opchain::cli::add_make_model_command, opchain::cli::add_quantize_command,
                   opchain::cli::add_bench_command, opchain::cli::add_align_command, opchain::cli::add_serve_command}) {
    opchain::cli::Runner run = add(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(run));  // the subcommand `add` just created
  }
  // Every command that picks a vendor (and `ops`, which lists them) takes plugin vendors too; they
  // load into the process-wide registry before the command runs (vendors/plugin_loader.h).
  std::vector<std::string> plugins;
  std::vector<CLI::App*> with_plugins;
  // The commands that run a model step by step can spread it over mpirun's ranks (docs/scale-out.md).
  opchain::tools::ParallelOptions parallel;
  for (auto& [sub, run] : commands) {
    const std::string& name = sub->get_name();
    if (sub->get_option_no_throw("--vendor") || name == "ops") {
      opchain::cli::add_vendor_plugin_flag(sub, plugins);
      with_plugins.push_back(sub);
    }
    if (name == "generate" || name == "logits" || name == "bench" || name == "serve" || name == "trace")
      opchain::cli::add_parallel_flags(sub, parallel);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (CLI::App* sub : with_plugins)
      if (sub->parsed()) opchain::load_vendor_plugins(opchain::builtin_registry(), plugins);
    for (auto& [sub, run] : commands)
      if (sub->parsed())
        return sub->get_option_no_throw("--tp") ? opchain::tools::run_as_rank(parallel, worker_model(sub), run) : run();
  } catch (const opchain::Error& e) {
    std::cerr << "opchain: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "opchain: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
