// `opchain generate`: its flags; the generation itself is tools/generate.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/generate.h"

namespace opchain::cli {

Runner add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt (or many, batched together)");
  auto o = std::make_shared<tools::GenerateOptions>();
  add_engine_flags(cmd, o->engine);
  auto* p1 = cmd->add_option("--prompt", o->prompt, "prompt text");
  auto* p2 = cmd->add_option("--prompt-ids", o->prompt_ids, "prompt as comma-separated token ids");
  auto* p3 = cmd->add_option("--prompts-file", o->prompts_file,
                             "JSONL: {\"prompt\": ...} or {\"prompt_ids\": [...]} per line");
  p1->excludes(p2)->excludes(p3);
  p2->excludes(p3);
  add_max_new_tokens_flag(cmd, o->max_new_tokens);
  add_temperature_flag(cmd, o->temperature);
  cmd->add_option("--top-p", o->top_p);
  cmd->add_option("--top-k", o->top_k);
  cmd->add_option("--min-p", o->min_p);
  cmd->add_option("--repetition-penalty", o->repetition_penalty);
  cmd->add_option("--presence-penalty", o->presence_penalty);
  cmd->add_option("--frequency-penalty", o->frequency_penalty);
  add_seed_flag(cmd, o->seed);
  cmd->add_option("--stop", o->stop, "stop string (repeatable)");
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template");
  add_no_thinking_flag(cmd, o->no_thinking);
  add_json_flag(cmd, o->json);
  cmd->add_flag("--ignore-eos", o->ignore_eos, "do not stop at the eos token");
  add_json_schema_flag(cmd, o->json_schema);
  cmd->add_flag("--json-object", o->json_object, "constrain the output to a JSON object")->excludes("--json-schema");
  return [o] {
    tools::run_generate(*o, std::cout);
    return 0;
  };
}

}  // namespace opchain::cli
