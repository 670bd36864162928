#include "io/model_directory.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace opchain {

namespace fs = std::filesystem;

namespace {

ModelFile read_if_present(const fs::path& dir, std::string_view name) {
  ModelFile f;
  f.path = (dir / name).string();
  std::error_code ec;
  if (!fs::exists(f.path, ec)) return f;
  std::ifstream in(f.path, std::ios::binary);
  std::ostringstream ss;
  if (in) ss << in.rdbuf();
  if (!in || in.bad()) throw FormatError("cannot read " + f.path);
  f.text = ss.str();
  return f;
}

}  // namespace

ModelDirectory ModelDirectory::read(const std::string& dir) {
  const fs::path root(dir);
  ModelDirectory d;
  d.dir = dir;
  d.config = read_if_present(root, model_file::kConfig);
  d.generation_config = read_if_present(root, model_file::kGenerationConfig);
  d.weights_index = read_if_present(root, model_file::kWeightsIndex);
  d.weights_path = (root / model_file::kWeights).string();
  std::error_code ec;
  d.has_single_weights = fs::exists(d.weights_path, ec);
  d.tokenizer = read_if_present(root, model_file::kTokenizer);
  d.tokenizer_config = read_if_present(root, model_file::kTokenizerConfig);
  d.chat_template = read_if_present(root, model_file::kChatTemplate);
  d.chat_template_json = read_if_present(root, model_file::kChatTemplateJson);
  return d;
}

std::string ModelDirectory::path_of(std::string_view name) const { return (fs::path(dir) / name).string(); }

const std::string& ModelDirectory::config_text() const {
  if (!config.exists())
    throw FormatError("cannot read " + config.path + " (is '" + dir + "' a Hugging Face model directory?)");
  return *config.text;
}

}  // namespace opchain
