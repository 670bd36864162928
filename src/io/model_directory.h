#pragma once
// Note [Model directory]: a Hugging Face model directory is read in one place. ModelDirectory::read
// finds every file opchain uses (the names below are spelled nowhere else), reads the small ones
// once, and the value is handed to the parsers: load_model_config, WeightStore, load_tokenizer,
// ChatTemplate::from_model_directory, load_generation_defaults and load_model. Reading never fails
// because a file is absent; the parser that needs it says so, naming the file and the directory.
// Writers of model directories (random_model, quantize_model, safetensors_writer) use the same names.
#include <optional>
#include <string>
#include <string_view>

namespace opchain {

namespace model_file {
inline constexpr std::string_view kConfig = "config.json";
inline constexpr std::string_view kGenerationConfig = "generation_config.json";
inline constexpr std::string_view kWeights = "model.safetensors";                  // one file of weights
inline constexpr std::string_view kWeightsIndex = "model.safetensors.index.json";  // or shards, by this index
inline constexpr std::string_view kTokenizer = "tokenizer.json";
inline constexpr std::string_view kTokenizerConfig = "tokenizer_config.json";
inline constexpr std::string_view kChatTemplate = "chat_template.jinja";     // wins over the fields below
inline constexpr std::string_view kChatTemplateJson = "chat_template.json";  // processor-style {"chat_template": ...}
}  // namespace model_file

// One file of the directory: where it would be, and its text when it is there.
struct ModelFile {
  std::string path;                 // <dir>/<name>, whether or not the file exists
  std::optional<std::string> text;  // the whole file; absent when there is no such file
  bool exists() const { return text.has_value(); }
};

struct ModelDirectory {
  std::string dir;
  ModelFile config;             // config.json
  ModelFile generation_config;  // generation_config.json
  ModelFile weights_index;      // model.safetensors.index.json (sharded weights)
  std::string weights_path;     // model.safetensors: memory-mapped by WeightStore, so not read here
  bool has_single_weights = false;
  ModelFile tokenizer;           // tokenizer.json
  ModelFile tokenizer_config;    // tokenizer_config.json (special tokens, the chat_template field)
  ModelFile chat_template;       // chat_template.jinja
  ModelFile chat_template_json;  // chat_template.json

  // Reads every file above that exists. Throws FormatError only when one exists but cannot be read.
  static ModelDirectory read(const std::string& dir);
  // <dir>/<name>, for files the index names (weight shards).
  std::string path_of(std::string_view name) const;
  // config.json's text; FormatError "cannot read <dir>/config.json (is '<dir>' a Hugging Face model
  // directory?)" when it is missing.
  const std::string& config_text() const;
};

}  // namespace opchain
