// `opchain tokenize` and `opchain chat-template`: the text front end on its own. DIR may hold only
// the tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja).
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/opchain/commands.h"
#include "core/error.h"
#include "io/chat_template.h"
#include "io/model_directory.h"
#include "io/tokenizer.h"

namespace opchain::cli {

namespace {

nlohmann::ordered_json read_json_file(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) throw InvalidArgumentError(std::string("cannot read ") + flag + " " + path);
  try {
    return nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string(flag) + " " + path + " is not valid JSON: " + e.what());
  }
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Encode text with the model's tokenizer; one JSON line per input");
  struct Opts {
    std::string model, text, cases;
    bool skip_special = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "directory with tokenizer.json")->required();
  auto* t = cmd->add_option("--text", o->text, "text to encode");
  auto* c = cmd->add_option("--cases", o->cases, "JSON array of strings");
  t->excludes(c);
  cmd->add_flag("--skip-special-tokens", o->skip_special, "decode without special tokens");
  return [o] {
    const Tokenizer tok = Tokenizer::from_model_directory(ModelDirectory::read(o->model));
    std::vector<std::string> inputs;
    if (!o->cases.empty()) {
      const auto j = read_json_file(o->cases, "--cases");
      if (!j.is_array()) throw InvalidArgumentError("--cases " + o->cases + " must be a JSON array of strings");
      for (const auto& v : j) {
        if (!v.is_string()) throw InvalidArgumentError("--cases " + o->cases + " must be a JSON array of strings");
        inputs.push_back(v.get<std::string>());
      }
    } else if (!o->text.empty()) {
      inputs.push_back(o->text);
    } else {
      throw InvalidArgumentError("give --text or --cases");
    }
    for (const auto& text : inputs) {
      const auto ids = tok.encode(text);
      nlohmann::ordered_json line;
      line["ids"] = ids;
      line["decoded"] = tok.decode(ids, o->skip_special);
      std::cout << dump(line) << "\n";
    }
    return 0;
  };
}

Runner add_chat_template_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat-template", "Render a conversation with the model's chat template");
  struct Opts {
    std::string model, conversation;
    bool ids = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "directory with tokenizer_config.json or chat_template.jinja")->required();
  cmd->add_option("--conversation", o->conversation,
                  "JSON {messages, tools, add_generation_prompt, enable_thinking, ...}")
      ->required();
  cmd->add_flag("--ids", o->ids, "also print the token ids of the prompt (one JSON line)");
  return [o] {
    const ModelDirectory dir = ModelDirectory::read(o->model);
    const ChatTemplate tmpl = ChatTemplate::from_model_directory(dir);
    const auto conv = read_json_file(o->conversation, "--conversation");
    if (!conv.is_object() || !conv.contains("messages") || !conv["messages"].is_array())
      throw InvalidArgumentError("--conversation " + o->conversation + " needs a \"messages\" array");
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (auto it = conv.begin(); it != conv.end(); ++it)
      if (it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt" && it.key() != "name")
        extra[it.key()] = it.value();
    const bool add_gen = conv.value("add_generation_prompt", false);
    const nlohmann::ordered_json tools = conv.contains("tools") ? conv["tools"] : nlohmann::ordered_json();
    const std::string prompt = tmpl.render(conv["messages"], tools, add_gen, extra);
    if (!o->ids) {
      std::cout << prompt;
      return 0;
    }
    const Tokenizer tok = Tokenizer::from_model_directory(dir);
    nlohmann::ordered_json line;
    line["prompt"] = prompt;
    line["ids"] = tok.encode(prompt);
    std::cout << dump(line) << "\n";
    return 0;
  };
}

}  // namespace opchain::cli
