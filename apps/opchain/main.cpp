// opchain: the command-line front end. Every library error becomes one line on stderr and exit 1.
#include <iostream>

#include "apps/opchain/commands.h"
#include "apps/opchain/parallel_run.h"
#include "core/error.h"
#include "vendors/builtin_vendors.h"
#include "vendors/plugin_loader.h"

int main(int argc, char** argv) {
  CLI::App app{"opchain: an inference engine for Mixture-of-Experts LLMs"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, opchain::cli::Runner>> commands;
  auto add = [&](opchain::cli::Runner r) {
    CLI::App* newest = app.get_subcommands({}).back();  // the subcommand the add_* call just created
    commands.emplace_back(newest, std::move(r));
  };
  add(opchain::cli::add_logits_command(app));
  add(opchain::cli::add_ops_command(app));
  add(opchain::cli::add_trace_command(app));
  add(opchain::cli::add_generate_command(app));
  add(opchain::cli::add_chat_command(app));
  add(opchain::cli::add_tokenize_command(app));
  add(opchain::cli::add_chat_template_command(app));
  add(opchain::cli::add_make_model_command(app));
  add(opchain::cli::add_quantize_command(app));
  add(opchain::cli::add_bench_command(app));
  add(opchain::cli::add_align_command(app));
  add(opchain::cli::add_serve_command(app));
  // Every command that picks a vendor (and `ops`, which lists them) takes plugin vendors too; they
  // load into the process-wide registry before the command runs (vendors/plugin_loader.h).
  std::vector<std::string> plugins;
  std::vector<CLI::App*> with_plugins;
  for (auto& [sub, run] : commands) {
    if (!sub->get_option_no_throw("--vendor") && sub->get_name() != "ops") continue;
    sub->add_option("--vendor-plugin", plugins,
                    "load a vendor plugin (a shared library built against include/opchain/vendor_abi.h); "
                    "repeatable; also OPCHAIN_VENDOR_PLUGINS=path:path");
    with_plugins.push_back(sub);
  }
  // The commands that run a model step by step can spread it over mpirun's ranks (docs/scale-out.md).
  opchain::cli::ParallelFlags parallel;
  for (auto& [sub, run] : commands) {
    const std::string& name = sub->get_name();
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
        return sub->get_option_no_throw("--tp") ? opchain::cli::run_as_rank(sub, parallel, run) : run();
  } catch (const opchain::Error& e) {
    std::cerr << "opchain: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "opchain: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
