// `opchain tokenize` and `opchain chat-template`: their flags; the text front end is tools/text.h.
#include <iostream>
#include <memory>

#include "apps/opchain/commands.h"
#include "apps/opchain/flags.h"
#include "tools/text.h"

namespace opchain::cli {

Runner add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Encode text with the model's tokenizer; one JSON line per input");
  auto o = std::make_shared<tools::TokenizeOptions>();
  add_model_flag(cmd, o->model);
  auto* text = cmd->add_option("--text", o->text, "text to encode");
  text->excludes(cmd->add_option("--cases", o->cases, "JSON array of strings"));
  cmd->add_flag("--skip-special-tokens", o->skip_special, "decode without special tokens");
  return [o] {
    tools::run_tokenize(*o, std::cout);
    return 0;
  };
}

Runner add_chat_template_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat-template", "Render a conversation with the model's chat template");
  auto o = std::make_shared<tools::ChatTemplateOptions>();
  add_model_flag(cmd, o->model);
  cmd->add_option("--conversation", o->conversation,
                  "JSON {messages, tools, add_generation_prompt, enable_thinking, ...}")
      ->required();
  cmd->add_flag("--ids", o->ids, "also print the token ids of the prompt (one JSON line)");
  return [o] {
    tools::run_chat_template(*o, std::cout);
    return 0;
  };
}

}  // namespace opchain::cli
