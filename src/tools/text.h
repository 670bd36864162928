#pragma once
// `opchain tokenize` and `opchain chat-template`: the text front end on its own, for checking the
// tokenizer and the Jinja chat template against transformers'. The model directory may hold only
// the tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja).
#include <ostream>
#include <string>

namespace opchain::tools {

struct TokenizeOptions {
  std::string model;          // directory with tokenizer.json
  std::string text;           // one text to encode, or
  std::string cases;          // a JSON file holding an array of strings
  bool skip_special = false;  // decode without special tokens
};

// One JSON line {ids, decoded} per input on `out`.
void run_tokenize(const TokenizeOptions& o, std::ostream& out);

struct ChatTemplateOptions {
  std::string model;         // directory with tokenizer_config.json or chat_template.jinja
  std::string conversation;  // JSON file {messages, tools, add_generation_prompt, enable_thinking, ...}
  bool ids = false;          // also the prompt's token ids, as one JSON line {prompt, ids}
};

// The rendered prompt on `out`.
void run_chat_template(const ChatTemplateOptions& o, std::ostream& out);

}  // namespace opchain::tools
