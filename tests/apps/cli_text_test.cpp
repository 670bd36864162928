// generate, tokenize and chat-template as a user runs them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli_run.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  return v;
}

TEST(CliGenerate, TheReadmeDemo) {
  const auto r = test::run_opchain("generate --model " + test::source_dir() +
                                   "/models/trained-qwen3-moe --prompt TheCat "
                                   "--temperature 0 --max-new-tokens 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto demo = test::run_opchain("generate --model " + test::source_dir() +
                                      "/models/trained-qwen3-moe --prompt-ids 51,262,1220 --temperature 0");
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  EXPECT_EQ(demo.out, " is a United States writer (1919-1997).\n");
  EXPECT_NE(demo.err.find("loaded Qwen3MoeForCausalLM"), std::string::npos) << demo.err;
}

TEST(CliGenerate, PromptsFileJsonInInputOrder) {
  const auto file = fs::temp_directory_path() / ("opchain-prompts-" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(file) << "{\"prompt\": \"The cat\"}\n{\"prompt_ids\": [51, 262, 1220]}\n{\"prompt\": \"A river is\"}\n";
  const auto r = test::run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") + " --prompts-file " +
                                   file.string() + " --json --max-new-tokens 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["text"], " is a United States writer (1919-1997).");
  EXPECT_EQ(lines[0]["finish_reason"], "stop");
  EXPECT_EQ(lines[0]["prompt_tokens"], 3);
  EXPECT_EQ(lines[0]["ids"], lines[1]["ids"]);  // same prompt as text and as ids
  EXPECT_EQ(lines[0]["completion_tokens"], lines[0]["ids"].size());
  fs::remove(file);
  const auto bad = test::run_opchain("generate --model " + test::model_dir("trained-qwen3-moe") +
                                     " --prompt-ids 1,2 --max-new-tokens 100000");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("exceeds the model's context"), std::string::npos) << bad.err;
}

TEST(CliTokenize, CasesFileGivesOneLinePerString) {
  const auto file = fs::temp_directory_path() / ("opchain-cases-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"(["Hello world!", "<|im_start|>user", "你好"])";
  const auto r =
      test::run_opchain("tokenize --model " + test::data_dir() + "/tokenizer/qwen3 --cases " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["ids"], (std::vector<int>{9707, 1879, 0}));
  EXPECT_EQ(lines[1]["ids"][0], 151644);
  EXPECT_EQ(lines[2]["decoded"], "你好");
  fs::remove(file);
}

TEST(CliChatTemplate, RendersTheQwen3Template) {
  const auto file = fs::temp_directory_path() / ("opchain-conv-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"messages": [{"role": "user", "content": "What is 2+2?"}], "add_generation_prompt": true,
                           "enable_thinking": false})";
  const auto r = test::run_opchain("chat-template --model " + test::data_dir() + "/tokenizer/qwen3 --conversation " +
                                   file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  fs::remove(file);
}

// A conversation nested 100000 levels deep overflowed the stack when the template context copied it
// (the CLI died with SIGSEGV); it is now one error line naming the limit, exit 1.
TEST(CliChatTemplate, DeeplyNestedConversationIsOneErrorLine) {
  const auto file = fs::temp_directory_path() / ("opchain-deep-" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"messages": [{"role": "user", "content": )" << std::string(100000, '[')
                      << std::string(100000, ']') << "}]}";
  const auto r = test::run_opchain("chat-template --model " + test::data_dir() + "/tokenizer/qwen3 --conversation " +
                                   file.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("opchain: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nest deeper than 128 levels"), std::string::npos) << r.err;
  fs::remove(file);
}

}  // namespace
}  // namespace opchain
