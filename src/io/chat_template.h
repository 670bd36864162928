#pragma once
// Renders a Hugging Face chat template the way transformers' apply_chat_template does (Jinja2
// with trim_blocks and lstrip_blocks, raise_exception(), a tojson that writes Python json.dumps
// text without ASCII escaping, special tokens and extra keyword arguments in the context), so
// the prompt we tokenize is byte-identical to the reference.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace opchain {

namespace jinja {
class Template;
}
struct ModelDirectory;

class ChatTemplate {
 public:
  // Loads the template from <dir>/chat_template.jinja if present (it wins, as in transformers),
  // else tokenizer_config.json's "chat_template" (a string, or a list of {name, template} from
  // which "default" is taken), else chat_template.json's "chat_template". Special tokens come from
  // tokenizer_config.json (strings or {"content": ...} objects): bos_token/eos_token, plus
  // unk/sep/pad/cls/mask_token and additional_special_tokens, which transformers also passes to
  // the template through special_tokens_map.
  // Throws FormatError if no template is found, a file is malformed, or the template uses an
  // unsupported construct (the message names the file, construct and line).
  // from_model_directory takes the directory already read (Note [Model directory]).
  static ChatTemplate from_model_dir(const std::string& dir);
  static ChatTemplate from_model_directory(const ModelDirectory& dir);

  // An empty bos/eos token is left out of the context (transformers omits tokens that are None),
  // so `bos_token is defined` behaves as it does for the reference.
  static ChatTemplate from_string(std::string source, std::string bos_token = "", std::string eos_token = "");

  // messages: JSON array of {role, content, tool_calls?, reasoning_content?, ...}.
  // tools: JSON array, or null for "no tools" (the template sees None).
  // extra_kwargs: object (or null) of further template variables, e.g. {"enable_thinking":
  //   false}; they override bos_token/eos_token. It may not redefine messages, tools or
  //   add_generation_prompt (InvalidArgumentError, as Python would reject the duplicate).
  // render() is const and may be called from several threads at once.
  // Throws InvalidArgumentError when the data cannot be rendered (including the template calling
  // raise_exception), FormatError for constructs only detectable while rendering.
  //
  // Key order: Python dicts keep insertion order and `tojson` prints it. nlohmann::json sorts
  // object keys, so pass nlohmann::ordered_json (parsed with ordered_json::parse) when tool
  // schemas or tool-call arguments must print in their original order.
  std::string render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                     const nlohmann::json& extra_kwargs) const;
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt, const nlohmann::ordered_json& extra_kwargs) const;

  const std::string& source() const noexcept { return source_; }
  const std::string& bos_token() const noexcept { return bos_token_; }
  const std::string& eos_token() const noexcept { return eos_token_; }

 private:
  static ChatTemplate load_from_model_directory(const ModelDirectory& dir);  // without guard_input
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token,
               std::shared_ptr<const jinja::Template> tmpl);

  template <class Json>
  std::string render_impl(const Json& messages, const Json& tools, bool add_generation_prompt,
                          const Json& extra_kwargs) const;

  std::string source_;
  std::string bos_token_;
  std::string eos_token_;
  // unk/sep/pad/cls/mask tokens that are set (name, text), from from_model_dir only.
  std::vector<std::pair<std::string, std::string>> other_tokens_;
  std::vector<std::string> additional_special_tokens_;
  std::shared_ptr<const jinja::Template> template_;
};

}  // namespace opchain
