// The public API (include/opchain/opchain.h) through libopchain.so: what it generates is what the
// engine generates, streaming and batching change nothing, and failures arrive as api::Error with
// the engine's message.
#include "opchain/opchain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/model_directory.h"
#include "io/tokenizer.h"
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
  const ModelDirectory dir = ModelDirectory::read(kModel);
  EXPECT_EQ(ids, Tokenizer::from_model_directory(dir).encode(text));
}

TEST(ApiLlm, GreedyGenerateEqualsTheEngines) {
  const ModelDirectory dir = ModelDirectory::read(kModel);
  LoadedModel m = load_model(dir, "cpu", {}, PrecisionChoice::Auto);
  const Tokenizer tok = Tokenizer::from_model_directory(dir);
  const GenerationDefaults defaults = load_generation_defaults(dir, m.config.eos_token_ids);
  EngineConfig ec;
  ec.kv_cache_bytes = 64ull << 20;
  ec.graph = true;
  LLMEngine engine(*m.model, m.device, &tok, ec, defaults.eos_ids);
  GenerationRequest r;
  r.prompt_ids = tok.encode("The cat");
  r.sampling.temperature = 0;
  r.max_new_tokens = 24;
  const auto expected = engine.generate({r});

  const api::Output out = shared_llm().generate("The cat", greedy(24));
  EXPECT_EQ(out.token_ids, expected[0].ids);
  EXPECT_EQ(out.text, expected[0].text);
  EXPECT_EQ(out.prompt_tokens, expected[0].prompt_tokens);
  EXPECT_EQ(api::to_string(out.finish_reason), std::string(finish_reason_name(expected[0].finish_reason)));
  EXPECT_EQ(shared_llm().generate_ids(tok.encode("The cat"), greedy(24)).token_ids, expected[0].ids);
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
  llm.cancel(12345678);  // unknown ids are ignored
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

TEST(ApiLlm, AppliesTheChatTemplate) {
  api::LLM& llm = shared_llm();
  EXPECT_TRUE(llm.info().has_chat_template);
  const std::string prompt = llm.apply_chat_template({{"system", "Be brief."}, {"user", "hi"}});
  const ChatTemplate tmpl = ChatTemplate::from_model_directory(ModelDirectory::read(kModel));
  const nlohmann::ordered_json messages = nlohmann::ordered_json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "hi"}}});
  EXPECT_EQ(prompt, tmpl.render(messages, nlohmann::ordered_json(), true, nlohmann::ordered_json::object()));
  EXPECT_NE(prompt.find("hi"), std::string::npos) << prompt;
  EXPECT_FALSE(llm.generate(prompt, greedy(8)).token_ids.empty());
}

TEST(ApiLlm, AModelWithoutTokenizerFilesRunsOnIds) {
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("opchain_api_ids_only_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  for (auto name : {model_file::kConfig, model_file::kWeights, model_file::kGenerationConfig})
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
