// ChatTemplate against transformers' apply_chat_template: the Qwen3 golden prompts must match
// byte for byte, and model directories load the way transformers loads them.
#include "io/chat_template.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

#ifndef OPCHAIN_TEST_DATA_DIR
#error "OPCHAIN_TEST_DATA_DIR must point at tests/data"
#endif

namespace opchain {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

const fs::path kData = OPCHAIN_TEST_DATA_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch model directory, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("opchain_chat_template_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

template <class E, class Fn>
std::string expect_throws(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

struct GoldenCase {
  std::string name;
  ordered_json messages;
  ordered_json tools;
  bool add_generation_prompt = false;
  ordered_json extra = ordered_json::object();
  std::string expected;
};

// chat_template_cases.json holds the apply_chat_template arguments; everything besides name,
// messages, tools and add_generation_prompt is a template kwarg (enable_thinking, ...).
std::vector<GoldenCase> load_golden() {
  const ordered_json cases = ordered_json::parse(slurp(kData / "tokenizer/chat_template_cases.json"));
  std::map<std::string, std::string> prompts;
  std::istringstream lines(slurp(kData / "tokenizer/chat_template_expected.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const ordered_json j = ordered_json::parse(line);
    prompts[j.at("name").get<std::string>()] = j.at("prompt").get<std::string>();
  }
  std::vector<GoldenCase> out;
  for (const auto& c : cases) {
    GoldenCase g;
    g.name = c.at("name").get<std::string>();
    g.messages = c.at("messages");
    g.tools = c.value("tools", ordered_json());
    g.add_generation_prompt = c.value("add_generation_prompt", false);
    for (auto it = c.begin(); it != c.end(); ++it) {
      if (it.key() != "name" && it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt") {
        g.extra[it.key()] = it.value();
      }
    }
    const auto p = prompts.find(g.name);
    EXPECT_NE(p, prompts.end()) << "no expected prompt for " << g.name;
    if (p != prompts.end()) g.expected = p->second;
    out.push_back(std::move(g));
  }
  return out;
}

TEST(ChatTemplateGolden, Qwen3MatchesTransformers) {
  const auto cases = load_golden();
  ASSERT_EQ(cases.size(), 14u);
  const ChatTemplate tmpl = ChatTemplate::from_model_dir((kData / "tokenizer/qwen3").string());
  EXPECT_EQ(tmpl.eos_token(), "<|im_end|>");
  EXPECT_EQ(tmpl.bos_token(), "");  // null in the config
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(tmpl.render(c.messages, c.tools, c.add_generation_prompt, c.extra), c.expected);
  }
}

TEST(ChatTemplateGolden, TokenizerConfigTemplateGivesSamePrompts) {
  // Same template, read from tokenizer_config.json instead of chat_template.jinja.
  TempDir dir;
  dir.write("tokenizer_config.json", slurp(kData / "tokenizer/qwen3/tokenizer_config.json"));
  const ChatTemplate tmpl = ChatTemplate::from_model_dir(dir.str());
  for (const auto& c : load_golden()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(tmpl.render(c.messages, c.tools, c.add_generation_prompt, c.extra), c.expected);
  }
}

TEST(ChatTemplateModels, TestModelDirectoriesLoadAndRender) {
  int loaded = 0;
  int chatml_models = 0;
  for (const auto& entry : fs::directory_iterator(kData / "models")) {
    const fs::path config = entry.path() / "tokenizer_config.json";
    if (!fs::exists(config)) continue;
    const auto j = nlohmann::json::parse(slurp(config));
    if (!j.contains("chat_template") || j["chat_template"].is_null()) continue;
    SCOPED_TRACE(entry.path().string());
    const ChatTemplate tmpl = ChatTemplate::from_model_dir(entry.path().string());
    EXPECT_FALSE(tmpl.eos_token().empty());
    const ordered_json messages = ordered_json::parse(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}])");
    const std::string prompt = tmpl.render(messages, nullptr, true, ordered_json::object());
    EXPECT_NE(prompt.find("Hi"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("Bye"), std::string::npos) << prompt;
    // The test models ship the plain ChatML template; its output is known exactly.
    const std::string chatml =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
        "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    if (tmpl.source() == chatml) {
      EXPECT_EQ(prompt,
                "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
      ++chatml_models;
    }
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(chatml_models, 0);
}

TEST(ChatTemplateLoading, JinjaFileWinsOverConfig) {
  TempDir dir;
  dir.write(
      "tokenizer_config.json",
      R"({"chat_template": "from config", "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})");
  dir.write("chat_template.jinja", "{{ bos_token }}from file {{ eos_token }}\n");
  const ChatTemplate tmpl = ChatTemplate::from_model_dir(dir.str());
  EXPECT_EQ(tmpl.bos_token(), "<s>");
  EXPECT_EQ(tmpl.eos_token(), "</s>");
  // jinja2 drops the file's single trailing newline.
  EXPECT_EQ(tmpl.render(ordered_json::array(), nullptr, false, nullptr), "<s>from file </s>");
}

TEST(ChatTemplateLoading, OtherSpecialTokensReachTheTemplate) {
  // transformers renders with **special_tokens_map, which holds every special token that is set.
  TempDir dir;
  dir.write("tokenizer_config.json", R"({
      "chat_template": "{{ pad_token }}|{{ additional_special_tokens|join(',') }}|{{ unk_token is defined }}",
      "pad_token": {"content": "<pad>"}, "unk_token": null,
      "additional_special_tokens": ["<a>", {"content": "<b>"}]})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.str()).render(ordered_json::array(), nullptr, false, nullptr),
            "<pad>|<a>,<b>|False");
}

TEST(ChatTemplateLoading, NamedTemplateListPicksDefault) {
  TempDir dir;
  dir.write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}]})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.str()).render(ordered_json::array(), nullptr, false, nullptr), "plain");

  TempDir no_default;
  no_default.write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "tools"}]})");
  const std::string msg = expect_throws<FormatError>([&] { ChatTemplate::from_model_dir(no_default.str()); });
  EXPECT_NE(msg.find("tool_use"), std::string::npos) << msg;
}

TEST(ChatTemplateLoading, ChatTemplateJsonFallback) {
  TempDir dir;
  dir.write("chat_template.json", R"({"chat_template": "from json"})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.str()).render(ordered_json::array(), nullptr, false, nullptr),
            "from json");
}

TEST(ChatTemplateLoading, MissingTemplateIsFormatError) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  const std::string msg = expect_throws<FormatError>([&] { ChatTemplate::from_model_dir(dir.str()); });
  EXPECT_NE(msg.find("no chat template"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.str()), std::string::npos) << msg;
}

TEST(ChatTemplateLoading, UnsupportedConstructNamesFileConstructAndLine) {
  TempDir dir;
  dir.write("chat_template.jinja", "{% for m in messages %}\n{{ m.content | wordwrap(20) }}\n{% endfor %}");
  const std::string msg = expect_throws<FormatError>([&] { ChatTemplate::from_model_dir(dir.str()); });
  EXPECT_NE(msg.find("chat_template.jinja"), std::string::npos) << msg;
  EXPECT_NE(msg.find("filter 'wordwrap'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
}

TEST(ChatTemplateLoading, MalformedConfigIsFormatError) {
  TempDir dir;
  dir.write("tokenizer_config.json", "{ not json");
  const std::string msg = expect_throws<FormatError>([&] { ChatTemplate::from_model_dir(dir.str()); });
  EXPECT_NE(msg.find("tokenizer_config.json"), std::string::npos) << msg;
}

TEST(ChatTemplateRender, ContextMatchesTransformers) {
  const ChatTemplate tmpl = ChatTemplate::from_string(
      "{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|{{ bos_token is defined }}|"
      "{{ eos_token }}|{{ enable_thinking }}|{{ messages|length }}",
      "", "<eos>");
  const ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": "x"}])");
  EXPECT_EQ(tmpl.render(messages, nullptr, true, ordered_json{{"enable_thinking", false}}),
            "True|True|True|False|<eos>|False|1");
  // Extra kwargs override special tokens, as **kwargs do after **special_tokens_map.
  EXPECT_EQ(tmpl.render(messages, ordered_json::array(), false, ordered_json{{"eos_token", "E"}}),
            "False|True|False|False|E||1");
}

TEST(ChatTemplateRender, RaiseExceptionIsInvalidArgument) {
  const ChatTemplate tmpl = ChatTemplate::from_string(
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  const ordered_json system = ordered_json::parse(R"([{"role": "system", "content": "x"}])");
  const std::string msg = expect_throws<InvalidArgumentError>([&] { tmpl.render(system, nullptr, false, nullptr); });
  EXPECT_NE(msg.find("System role not supported"), std::string::npos) << msg;
}

TEST(ChatTemplateRender, RejectsBadArguments) {
  const ChatTemplate tmpl = ChatTemplate::from_string("x");
  expect_throws<InvalidArgumentError>([&] { tmpl.render(ordered_json::object(), nullptr, false, nullptr); });
  expect_throws<InvalidArgumentError>([&] {
    tmpl.render(ordered_json::array(), nullptr, false, ordered_json{{"messages", 1}});
  });
  expect_throws<InvalidArgumentError>(
      [&] { tmpl.render(ordered_json::array(), nullptr, false, ordered_json::array()); });
}

TEST(ChatTemplateRender, PlainJsonOverloadSortsKeys) {
  // nlohmann::json sorts object keys; ordered_json keeps them. Both overloads render.
  const ChatTemplate tmpl = ChatTemplate::from_string("{{ tools[0]|tojson }}");
  const std::string tools = R"([{"type": "function", "function": {"name": "f"}}])";
  EXPECT_EQ(tmpl.render(ordered_json::array(), ordered_json::parse(tools), false, ordered_json::object()),
            R"({"type": "function", "function": {"name": "f"}})");
  EXPECT_EQ(tmpl.render(nlohmann::json::array(), nlohmann::json::parse(tools), false, nlohmann::json::object()),
            R"({"function": {"name": "f"}, "type": "function"})");
}

// Building the context copied the conversation, and nlohmann's copy recurses once per level: a deep
// value (the CLI reads it from a file) overflowed the stack before the template ran.
TEST(ChatTemplateRender, DeeplyNestedConversationIsRefusedBeforeCopying) {
  const ChatTemplate tmpl = ChatTemplate::from_string("{{ messages|length }}");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const ordered_json messages = ordered_json::parse("[{\"role\": \"user\", \"content\": " + deep + "}]");
  const std::string msg = expect_throws<InvalidArgumentError>([&] { tmpl.render(messages, nullptr, false, nullptr); });
  EXPECT_NE(msg.find("messages nest deeper than 128 levels"), std::string::npos) << msg;
  const ordered_json tools = ordered_json::parse(deep);
  expect_throws<InvalidArgumentError>([&] { tmpl.render(ordered_json::array(), tools, false, nullptr); });
}

}  // namespace
}  // namespace opchain
