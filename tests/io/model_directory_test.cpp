// ModelDirectory (Note [Model directory]): which files are found and read, and the errors of the
// parsers that are handed a directory that lacks what they need.
#include "io/model_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "engine/generation_config.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "io/tokenizer.h"
#include "test_paths.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("opchain_model_directory_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  void write(std::string_view name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }
  void copy_from(const std::string& dir, std::string_view name) const {
    fs::copy_file(fs::path(dir) / name, path_ / name);
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelDirectory, ReadsEveryFileOfAModel) {
  const std::string dir = test::model_dir("trained-qwen3-moe");
  const ModelDirectory d = ModelDirectory::read(dir);
  EXPECT_EQ(d.dir, dir);
  EXPECT_TRUE(d.config.exists());
  EXPECT_TRUE(d.generation_config.exists());
  EXPECT_TRUE(d.tokenizer.exists());
  EXPECT_TRUE(d.tokenizer_config.exists());
  EXPECT_TRUE(d.has_single_weights);
  EXPECT_FALSE(d.weights_index.exists());
  EXPECT_FALSE(d.chat_template.exists());
  EXPECT_EQ(d.config.path, (fs::path(dir) / model_file::kConfig).string());
  EXPECT_EQ(d.config_text(), *d.config.text);
  // What the parsers make of it is what the string forms make of the directory.
  EXPECT_EQ(load_model_config(d).hidden_size, load_model_config(dir).hidden_size);
  EXPECT_EQ(load_generation_defaults(d, {}).eos_ids, load_generation_defaults(dir, {}).eos_ids);
  EXPECT_EQ(Tokenizer::from_model_directory(d).encode("The cat"),
            Tokenizer::from_file((fs::path(dir) / model_file::kTokenizer).string()).encode("The cat"));
  EXPECT_EQ(WeightStore(d).names(), WeightStore(dir).names());
}

TEST(ModelDirectory, AnEmptyDirectoryReadsAndEachParserNamesWhatIsMissing) {
  ScratchDir tmp;
  const ModelDirectory d = ModelDirectory::read(tmp.str());
  EXPECT_FALSE(d.config.exists());
  EXPECT_FALSE(d.tokenizer.exists());
  EXPECT_FALSE(d.has_single_weights);
  const std::string config_err = error_of([&] { load_model_config(d); });
  EXPECT_NE(config_err.find("cannot read " + d.config.path), std::string::npos) << config_err;
  EXPECT_NE(config_err.find("Hugging Face model directory"), std::string::npos) << config_err;
  EXPECT_EQ(error_of([&] { Tokenizer::from_model_directory(d); }), "no tokenizer.json in " + tmp.str());
  EXPECT_EQ(error_of([&] { WeightStore{d}; }), "no model.safetensors or model.safetensors.index.json in " + tmp.str());
  const std::string template_err = error_of([&] { ChatTemplate::from_model_directory(d); });
  EXPECT_NE(template_err.find("no chat template in " + tmp.str()), std::string::npos) << template_err;
  // No generation_config.json: the config's eos ids and no sampling defaults.
  EXPECT_EQ(load_generation_defaults(d, {7}).eos_ids, std::vector<int32_t>{7});
}

TEST(ModelDirectory, ANonexistentDirectoryFailsWhereTheModelIsLoaded) {
  const std::string missing = (fs::temp_directory_path() / "opchain_no_such_model_dir").string();
  const std::string err = error_of([&] { load_model(missing, "cpu"); });
  EXPECT_NE(err.find("is '" + missing + "' a Hugging Face model directory?"), std::string::npos) << err;
}

TEST(ModelDirectory, TheTemplateFileWinsOverTheTokenizerConfigField) {
  ScratchDir tmp;
  tmp.write(model_file::kTokenizerConfig,
            R"({"chat_template": "field:{{ messages[0].content }}", "eos_token": "<e>"})");
  {
    const ModelDirectory d = ModelDirectory::read(tmp.str());
    EXPECT_TRUE(d.tokenizer_config.exists());
    const ChatTemplate t = ChatTemplate::from_model_directory(d);
    EXPECT_EQ(t.source(), "field:{{ messages[0].content }}");
    EXPECT_EQ(t.eos_token(), "<e>");
  }
  tmp.write(model_file::kChatTemplate, "file:{{ messages[0].content }}");
  const ModelDirectory d = ModelDirectory::read(tmp.str());
  ASSERT_TRUE(d.chat_template.exists());
  const ChatTemplate t = ChatTemplate::from_model_directory(d);
  EXPECT_EQ(t.source(), "file:{{ messages[0].content }}");
  EXPECT_EQ(t.eos_token(), "<e>");  // special tokens still come from tokenizer_config.json
  EXPECT_EQ(t.render(nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}}), nlohmann::json(), false,
                     nlohmann::json::object()),
            "file:hi");
}

TEST(ModelDirectory, TheProcessorStyleTemplateFileIsTheLastResort) {
  ScratchDir tmp;
  tmp.write(model_file::kChatTemplateJson, R"({"chat_template": "json:{{ messages | length }}"})");
  const ChatTemplate t = ChatTemplate::from_model_directory(ModelDirectory::read(tmp.str()));
  EXPECT_EQ(t.source(), "json:{{ messages | length }}");
}

TEST(ModelDirectory, MalformedFilesAreNamedByTheParserThatReadsThem) {
  ScratchDir tmp;
  tmp.write(model_file::kConfig, "{not json");
  tmp.write(model_file::kGenerationConfig, "[1, 2");
  tmp.write(model_file::kTokenizerConfig, "\"a string\"");
  const ModelDirectory d = ModelDirectory::read(tmp.str());  // reading does not parse
  const std::string config_err = error_of([&] { load_model_config(d); });
  EXPECT_NE(config_err.find(d.config.path), std::string::npos) << config_err;
  const std::string gen_err = error_of([&] { load_generation_defaults(d, {}); });
  EXPECT_NE(gen_err.find(d.generation_config.path), std::string::npos) << gen_err;
  const std::string template_err = error_of([&] { ChatTemplate::from_model_directory(d); });
  EXPECT_NE(template_err.find(d.tokenizer_config.path + ": expected a JSON object"), std::string::npos) << template_err;
}

TEST(ModelDirectory, ATokenizerOnlyDirectoryServesTheTextFrontEnd) {
  const std::string src = test::data_dir() + "/tokenizer/qwen3";
  ScratchDir tmp;
  for (auto name : {model_file::kTokenizer, model_file::kTokenizerConfig, model_file::kChatTemplate})
    tmp.copy_from(src, name);
  const ModelDirectory d = ModelDirectory::read(tmp.str());
  EXPECT_FALSE(d.config.exists());
  EXPECT_EQ(Tokenizer::from_model_directory(d).encode("hello world"),
            Tokenizer::from_file(src + "/tokenizer.json").encode("hello world"));
  EXPECT_EQ(ChatTemplate::from_model_directory(d).source(), ChatTemplate::from_model_dir(src).source());
}

}  // namespace
}  // namespace opchain
