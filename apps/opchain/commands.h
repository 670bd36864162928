#pragma once
// Each `opchain <command>` registers its flags on the app and runs when selected.
#include <CLI/CLI.hpp>
#include <functional>

namespace opchain::cli {

using Runner = std::function<int()>;

// Adds the subcommand; returns the function main() calls when it was chosen.
Runner add_logits_command(CLI::App& app);
Runner add_ops_command(CLI::App& app);
Runner add_trace_command(CLI::App& app);
Runner add_generate_command(CLI::App& app);
Runner add_chat_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_chat_template_command(CLI::App& app);
Runner add_make_model_command(CLI::App& app);
Runner add_quantize_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_align_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);

}  // namespace opchain::cli
