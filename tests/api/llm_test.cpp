// The public API (include/opchain/opchain.h) as a user links it: this binary is built from the public
// header and libopchain.so alone (no engine header, no engine library), and what the API generates,
// tokenizes and renders is compared with what the `opchain` binary prints for the same input.
// Streaming and batching change nothing, and failures arrive as api::Error with the engine's message.
#include "opchain/opchain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/cli_run.h"
#include "test_paths.h"

namespace opchain {
namespace {

const std::string kModel = test::model_dir("trained-qwen3-moe");

api::LLM& shared_llm() {
  static api::LLM llm(kModel, [] {
    api::ModelOptions o;
    o.kv_cache_mb = 64;
    return o;
  }());
  return llm;
}

api::SamplingParams greedy(int64_t max_tokens) {
  api::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  return p;
}

TEST(ApiLlm, OpensAModelAndDescribesIt) {
  const api::ModelInfo info = shared_llm().info();
  EXPECT_EQ(info.architecture, "Qwen3MoeForCausalLM");
  EXPECT_GT(info.vocab_size, 0);
  EXPECT_GT(info.parameters, 0);
  EXPECT_GT(info.max_context, 0);
  EXPECT_TRUE(info.has_tokenizer);
}

TEST(ApiLlm, TokenizeRoundTrips) {
  api::LLM& llm = shared_llm();
  const std::string text = "The cat sat on the mat.";
  const auto ids = llm.tokenize(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(llm.detokenize(ids), text);
  const test::CliResult cli = test::run_opchain("tokenize --model " + kModel + " --text '" + text + "'");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(ids, nlohmann::json::parse(cli.out)["ids"].get<std::vector<int32_t>>());
}

std::string csv(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(ApiLlm, GreedyGenerateEqualsTheCli) {
  const test::CliResult cli = test::run_opchain("generate --model " + kModel +
                                                " --prompt 'The cat' --temperature 0 --max-new-tokens 24 --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json expected = nlohmann::json::parse(cli.out);
  const api::Output out = shared_llm().generate("The cat", greedy(24));
  EXPECT_EQ(out.token_ids, expected["ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out.text, expected["text"].get<std::string>());
  EXPECT_EQ(out.prompt_tokens, expected["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(api::to_string(out.finish_reason), expected["finish_reason"].get<std::string>());
  const std::vector<int32_t> prompt = shared_llm().tokenize("The cat");
  EXPECT_EQ(shared_llm().generate_ids(prompt, greedy(24)).token_ids, out.token_ids);
  const test::CliResult from_ids = test::run_opchain("generate --model " + kModel + " --prompt-ids " + csv(prompt) +
                                                     " --temperature 0 --max-new-tokens 24 --json");
  ASSERT_EQ(from_ids.exit_code, 0) << from_ids.err;
  EXPECT_EQ(nlohmann::json::parse(from_ids.out)["ids"], expected["ids"]);
}

TEST(ApiLlm, StreamedPiecesConcatenateToTheText) {
  api::LLM& llm = shared_llm();
  std::string streamed;
  std::vector<int32_t> tokens;
  int finished = 0;
  const api::Output out = llm.generate("Once upon a time", greedy(30), [&](const api::Piece& p) {
    streamed += p.text;
    if (p.token >= 0) tokens.push_back(p.token);
    finished += p.finished;
  });
  EXPECT_EQ(streamed, out.text);
  EXPECT_EQ(finished, 1);
  EXPECT_FALSE(out.text.empty());
  // Pieces carry the tokens that add text; a closing stop token may come only with the output.
  ASSERT_LE(tokens.size(), out.token_ids.size());
  EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), out.token_ids.begin()));
  EXPECT_EQ(out.text, llm.generate("Once upon a time", greedy(30)).text);  // streaming changes nothing
}

TEST(ApiLlm, ManyRequestsBatchToWhatEachGivesAlone) {
  api::LLM& llm = shared_llm();
  const std::vector<std::string> prompts = {"The cat", "A dog", "Once upon a time", "The sun"};
  std::vector<api::Output> alone;
  for (const auto& p : prompts) alone.push_back(llm.generate(p, greedy(16)));
  const int64_t steps_before = llm.metrics().steps;
  const auto batched = llm.generate_batch(prompts, greedy(16));
  ASSERT_EQ(batched.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(batched[i].token_ids, alone[i].token_ids) << prompts[i];
    EXPECT_EQ(batched[i].text, alone[i].text) << prompts[i];
  }
  // Batched together: far fewer steps than one prompt after another.
  EXPECT_LE(llm.metrics().steps - steps_before, 17 + 2);

  // submit / step / wait, in any order.
  std::vector<uint64_t> ids;
  for (const auto& p : prompts) ids.push_back(llm.submit(p, greedy(16)));
  EXPECT_TRUE(llm.step());
  const api::Metrics mid = llm.metrics();
  EXPECT_EQ(mid.running, static_cast<int64_t>(prompts.size()));
  EXPECT_GT(mid.kv_blocks_used, 0);
  EXPECT_GT(mid.kv_blocks_total, mid.kv_blocks_used);
  EXPECT_GT(mid.kv_cache_bytes, 0u);
  for (size_t i = prompts.size(); i-- > 0;) EXPECT_EQ(llm.wait(ids[i]).token_ids, alone[i].token_ids);
  EXPECT_FALSE(llm.step());
  EXPECT_EQ(llm.metrics().running, 0);
  EXPECT_THROW(llm.wait(ids[0]), api::Error);  // each output is handed out once
}

TEST(ApiLlm, CancelStopsARequestAndKeepsWhatItMade) {
  api::LLM& llm = shared_llm();
  api::SamplingParams p = greedy(200);
  p.ignore_eos = true;
  api::SamplingParams eight = greedy(8);
  eight.ignore_eos = true;
  const uint64_t keep = llm.submit("The sun", eight);
  int pieces = 0;
  const uint64_t id = llm.submit("The cat", p, [&](const api::Piece&) { ++pieces; });
  for (int i = 0; i < 4; ++i) llm.step();
  llm.cancel(id);
  const api::Output out = llm.wait(id);
  EXPECT_EQ(out.finish_reason, api::FinishReason::Cancelled);
  EXPECT_LT(static_cast<int64_t>(out.token_ids.size()), 200);
  EXPECT_GT(pieces, 0);
  EXPECT_EQ(llm.wait(keep).finish_reason, api::FinishReason::Length);  // the other request is untouched
  llm.cancel(12345678);                                                // unknown ids are ignored
  EXPECT_FALSE(llm.step());
}

TEST(ApiLlm, BadInputThrowsTheEnginesMessage) {
  api::LLM& llm = shared_llm();
  try {
    llm.generate("", greedy(4));
    FAIL() << "an empty prompt ran";
  } catch (const api::Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  api::SamplingParams bad = greedy(4);
  bad.top_p = 2.0f;
  EXPECT_THROW(llm.generate("The cat", bad), api::Error);
  EXPECT_THROW(llm.generate_ids({-5}, greedy(4)), api::Error);
  EXPECT_FALSE(llm.step());  // nothing was left queued
}

TEST(ApiLlm, ABadModelDirectoryThrowsAClearMessage) {
  const std::string missing = (std::filesystem::temp_directory_path() / "opchain_api_no_such_model").string();
  try {
    api::LLM llm(missing);
    FAIL() << "opened " << missing;
  } catch (const api::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(missing + "/config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Hugging Face model directory"), std::string::npos) << msg;
  }
  api::ModelOptions o;
  o.precision = "fp4";
  try {
    api::LLM llm(kModel, o);
    FAIL() << "opened with precision fp4";
  } catch (const api::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp4'"), std::string::npos) << e.what();
  }
  o.precision = "auto";
  o.vendor = "no-such-vendor";
  EXPECT_THROW((api::LLM{kModel, o}), api::Error);
}

TEST(ApiLlm, AppliesTheChatTemplateAsTheCliRendersIt) {
  api::LLM& llm = shared_llm();
  EXPECT_TRUE(llm.info().has_chat_template);
  const std::string prompt = llm.apply_chat_template({{"system", "Be brief."}, {"user", "hi"}});
  const std::filesystem::path conv =
      std::filesystem::temp_directory_path() / ("opchain_api_conv_" + std::to_string(::getpid()) + ".json");
  std::ofstream(conv)
      << R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                            "add_generation_prompt": true})";
  const test::CliResult cli = test::run_opchain("chat-template --model " + kModel + " --conversation " + conv.string());
  std::filesystem::remove(conv);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(prompt, cli.out);
  EXPECT_NE(prompt.find("hi"), std::string::npos) << prompt;
  EXPECT_FALSE(llm.generate(prompt, greedy(8)).token_ids.empty());
}

TEST(ApiLlm, AModelWithoutTokenizerFilesRunsOnIds) {
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("opchain_api_ids_only_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  for (const char* name : {"config.json", "model.safetensors", "generation_config.json"})
    std::filesystem::copy_file(std::filesystem::path(kModel) / name, tmp / name,
                               std::filesystem::copy_options::overwrite_existing);
  {
    api::LLM llm(tmp.string());
    EXPECT_FALSE(llm.info().has_tokenizer);
    EXPECT_FALSE(llm.info().has_chat_template);
    const std::vector<int32_t> prompt = shared_llm().tokenize("The cat");
    EXPECT_EQ(llm.generate_ids(prompt, greedy(12)).token_ids, shared_llm().generate_ids(prompt, greedy(12)).token_ids);
    try {
      llm.tokenize("The cat");
      FAIL() << "tokenized without tokenizer.json";
    } catch (const api::Error& e) {
      EXPECT_NE(std::string(e.what()).find("no tokenizer.json in " + tmp.string()), std::string::npos) << e.what();
    }
    try {
      llm.apply_chat_template({{"user", "hi"}});
      FAIL() << "rendered without a chat template";
    } catch (const api::Error& e) {
      EXPECT_NE(std::string(e.what()).find("has no chat template"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace opchain
