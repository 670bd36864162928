#include "io/chat_template.h"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/input_errors.h"
#include "io/jinja.h"
#include "io/json_input.h"
#include "io/model_directory.h"

namespace opchain {
namespace {

// Special tokens are serialized either as plain strings or as AddedToken objects; unset -> "".
std::string token_text(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return "";
}

// tokenizer_config.json's chat_template: a string, or a list of named templates.
std::optional<std::string> template_from_config(const nlohmann::json& config, const std::string& path) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    std::string names;
    for (const auto& entry : *it) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
          !entry["template"].is_string()) {
        throw FormatError(path + ": chat_template list entries must be {name, template} strings");
      }
      if (entry["name"] == "default") return entry["template"].get<std::string>();
      names += (names.empty() ? "" : ", ") + entry["name"].get<std::string>();
    }
    throw FormatError(path + ": has several chat templates (" + names + ") and none is named 'default'");
  }
  throw FormatError(path + ": chat_template must be a string or a list of {name, template}");
}

jinja::Template compile(const std::string& source, const std::string& origin) {
  try {
    // transformers' environment: trim_blocks=True, lstrip_blocks=True.
    return jinja::Template::parse(source, jinja::Options{true, true, false});
  } catch (const FormatError& e) {
    throw FormatError(origin + ": " + e.what());
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token,
                           std::shared_ptr<const jinja::Template> tmpl)
    : source_(std::move(source)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      template_(std::move(tmpl)) {}

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir) {
  return guard_input(dir, [&] { return load_from_model_directory(ModelDirectory::read(dir)); });
}

ChatTemplate ChatTemplate::from_model_directory(const ModelDirectory& dir) {
  return guard_input(dir.dir, [&] { return load_from_model_directory(dir); });
}

ChatTemplate ChatTemplate::load_from_model_directory(const ModelDirectory& dir) {
  const std::string& config_path = dir.tokenizer_config.path;
  nlohmann::json config = nlohmann::json::object();
  if (dir.tokenizer_config.exists()) {
    config = parse_json_input(*dir.tokenizer_config.text, config_path);
    if (!config.is_object()) throw FormatError(config_path + ": expected a JSON object");
  }

  std::optional<std::string> source;
  std::string origin;
  if (dir.chat_template.exists()) {
    source = *dir.chat_template.text;
    origin = dir.chat_template.path;
  }
  if (!source) {
    source = template_from_config(config, config_path);
    origin = config_path;
  }
  if (!source && dir.chat_template_json.exists()) {
    // Processor-style chat_template.json: {"chat_template": "..."}.
    const nlohmann::json j = parse_json_input(*dir.chat_template_json.text, dir.chat_template_json.path);
    if (j.is_object()) source = template_from_config(j, dir.chat_template_json.path);
    origin = dir.chat_template_json.path;
  }
  if (!source) {
    throw FormatError("no chat template in " + dir.dir + ": looked for " + std::string(model_file::kChatTemplate) +
                      ", \"chat_template\" in " + std::string(model_file::kTokenizerConfig) + ", and " +
                      std::string(model_file::kChatTemplateJson));
  }
  auto tmpl = std::make_shared<const jinja::Template>(compile(*source, origin));
  ChatTemplate result(std::move(*source), token_text(config, "bos_token"), token_text(config, "eos_token"),
                      std::move(tmpl));
  for (const char* name : {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    std::string text = token_text(config, name);
    if (!text.empty()) result.other_tokens_.emplace_back(name, std::move(text));
  }
  if (const auto it = config.find("additional_special_tokens"); it != config.end() && it->is_array()) {
    for (const auto& token : *it) {
      if (token.is_string()) {
        result.additional_special_tokens_.push_back(token.get<std::string>());
      } else if (token.is_object() && token.contains("content") && token["content"].is_string()) {
        result.additional_special_tokens_.push_back(token["content"].get<std::string>());
      }
    }
  }
  return result;
}

ChatTemplate ChatTemplate::from_string(std::string source, std::string bos_token, std::string eos_token) {
  auto tmpl = std::make_shared<const jinja::Template>(compile(source, "chat template"));
  return ChatTemplate(std::move(source), std::move(bos_token), std::move(eos_token), std::move(tmpl));
}

template <class Json>
std::string ChatTemplate::render_impl(const Json& messages, const Json& tools, bool add_generation_prompt,
                                      const Json& extra_kwargs) const {
  if (!messages.is_array()) {
    throw InvalidArgumentError("chat template: messages must be a JSON array, got " +
                               std::string(messages.type_name()));
  }
  if (!extra_kwargs.is_null() && !extra_kwargs.is_object()) {
    throw InvalidArgumentError("chat template: extra kwargs must be a JSON object, got " +
                               std::string(extra_kwargs.type_name()));
  }
  // The context below copies these values, and copying recurses once per level (Note [JSON nesting]).
  for (const auto& [name, value] : {std::pair<const char*, const Json*>{"messages", &messages},
                                    {"tools", &tools},
                                    {"extra kwargs", &extra_kwargs}}) {
    if (json_nests_deeper_than(*value, kMaxJsonNesting)) {
      throw InvalidArgumentError(std::string("chat template: ") + name + " nest deeper than " +
                                 std::to_string(kMaxJsonNesting) + " levels (the JSON nesting limit)");
    }
  }
  // Same variables, in the same order, as transformers' render call:
  // render(messages=..., tools=..., documents=None, add_generation_prompt=...,
  //        **special_tokens_map, **kwargs)
  Json context = Json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  // special_tokens_map only lists tokens that are set.
  if (!bos_token_.empty()) context["bos_token"] = bos_token_;
  if (!eos_token_.empty()) context["eos_token"] = eos_token_;
  for (const auto& [name, text] : other_tokens_) context[name] = text;
  if (!additional_special_tokens_.empty()) context["additional_special_tokens"] = additional_special_tokens_;
  if (extra_kwargs.is_object()) {
    for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) {
      if (it.key() == "messages" || it.key() == "tools" || it.key() == "add_generation_prompt") {
        throw InvalidArgumentError("chat template: extra kwargs may not redefine '" + it.key() +
                                   "'; pass it as the dedicated argument");
      }
      context[it.key()] = it.value();
    }
  }
  return template_->render(context);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& tools,
                                 bool add_generation_prompt, const nlohmann::json& extra_kwargs) const {
  return render_impl(messages, tools, add_generation_prompt, extra_kwargs);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, const nlohmann::ordered_json& extra_kwargs) const {
  return render_impl(messages, tools, add_generation_prompt, extra_kwargs);
}

}  // namespace opchain
