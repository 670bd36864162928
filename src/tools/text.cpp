#include "tools/text.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/chat_template.h"
#include "io/model_directory.h"
#include "io/tokenizer.h"

namespace opchain::tools {

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

void run_tokenize(const TokenizeOptions& o, std::ostream& out) {
  const Tokenizer tok = Tokenizer::from_model_directory(ModelDirectory::read(o.model));
  std::vector<std::string> inputs;
  if (!o.cases.empty()) {
    const auto j = read_json_file(o.cases, "--cases");
    if (!j.is_array()) throw InvalidArgumentError("--cases " + o.cases + " must be a JSON array of strings");
    for (const auto& v : j) {
      if (!v.is_string()) throw InvalidArgumentError("--cases " + o.cases + " must be a JSON array of strings");
      inputs.push_back(v.get<std::string>());
    }
  } else if (!o.text.empty()) {
    inputs.push_back(o.text);
  } else {
    throw InvalidArgumentError("give --text or --cases");
  }
  for (const auto& text : inputs) {
    const auto ids = tok.encode(text);
    nlohmann::ordered_json line;
    line["ids"] = ids;
    line["decoded"] = tok.decode(ids, o.skip_special);
    out << dump(line) << "\n";
  }
}

void run_chat_template(const ChatTemplateOptions& o, std::ostream& out) {
  const ModelDirectory dir = ModelDirectory::read(o.model);
  const ChatTemplate tmpl = ChatTemplate::from_model_directory(dir);
  const auto conv = read_json_file(o.conversation, "--conversation");
  if (!conv.is_object() || !conv.contains("messages") || !conv["messages"].is_array())
    throw InvalidArgumentError("--conversation " + o.conversation + " needs a \"messages\" array");
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  for (auto it = conv.begin(); it != conv.end(); ++it)
    if (it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt" && it.key() != "name")
      extra[it.key()] = it.value();
  const bool add_gen = conv.value("add_generation_prompt", false);
  const nlohmann::ordered_json tools = conv.contains("tools") ? conv["tools"] : nlohmann::ordered_json();
  const std::string prompt = tmpl.render(conv["messages"], tools, add_gen, extra);
  if (!o.ids) {
    out << prompt;
    return;
  }
  const Tokenizer tok = Tokenizer::from_model_directory(dir);
  nlohmann::ordered_json line;
  line["prompt"] = prompt;
  line["ids"] = tok.encode(prompt);
  out << dump(line) << "\n";
}

}  // namespace opchain::tools
