// `opchain chat`: its flags; the conversation loop is tools/chat.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/chat.h"

namespace opchain::cli {

Runner add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "Interactive chat with the model (streams replies; Ctrl-C stops a reply)");
  auto o = std::make_shared<tools::ChatOptions>();
  add_engine_flags(cmd, o->engine);
  add_max_new_tokens_flag(cmd, o->max_new_tokens);
  add_temperature_flag(cmd, o->temperature);
  add_seed_flag(cmd, o->seed);
  cmd->add_option("--system", o->system, "system prompt");
  add_no_thinking_flag(cmd, o->no_thinking);
  return [o] {
    tools::run_chat(*o, std::cin, std::cout, std::cerr);
    return 0;
  };
}

}  // namespace opchain::cli
