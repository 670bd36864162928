// Structured output through the engine on the trained demo model: sampled constrained outputs are
// complete JSON of the schema, and a constrained request batched with unconstrained ones leaves
// their tokens exactly as when they run alone (batch invariance).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/generation_config.h"
#include "engine/json_schema_grammar.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/tokenizer.h"
#include "test_paths.h"

namespace opchain {
namespace {

struct DemoModel {
  LoadedModel model;
  std::optional<Tokenizer> tokenizer;
  std::vector<int32_t> eos;
  DemoModel() {
    const std::string dir = test::model_dir("trained-qwen3-moe");
    model = load_model(dir, "cpu");
    tokenizer = Tokenizer::from_file(dir + "/tokenizer.json");
    eos = load_generation_defaults(dir, model.config.eos_token_ids).eos_ids;
  }
  std::unique_ptr<LLMEngine> engine() const {
    return std::make_unique<LLMEngine>(*model.model, model.device, &*tokenizer, EngineConfig{}, eos);
  }
};

GenerationRequest sampled(const Tokenizer& tok, const std::string& prompt, uint64_t seed, int64_t max_new) {
  GenerationRequest r;
  r.prompt_ids = tok.encode(prompt);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.max_new_tokens = max_new;
  return r;
}

TEST(StructuredOutput, SampledOutputsParseAndFitTheSchema) {
  const DemoModel m;
  auto grammar = compile_json_schema_text(R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},
      "n":{"type":"integer"},"tags":{"type":"array","items":{"enum":["x","y"]},"maxItems":2}},"required":["name","n"]})");
  std::vector<GenerationRequest> reqs;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    reqs.push_back(sampled(*m.tokenizer, "The cat", seed, 256));
    reqs.back().grammar = grammar;
  }
  const auto outs = m.engine()->generate(std::move(reqs));
  for (const auto& o : outs) {
    ASSERT_EQ(o.finish_reason, FinishReason::Stop) << o.text;
    const auto j = nlohmann::json::parse(o.text);
    ASSERT_TRUE(j.is_object()) << o.text;
    ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << o.text;
    EXPECT_LE(j["name"].get<std::string>().size(), 8u * 4u);
    ASSERT_TRUE(j.contains("n") && j["n"].is_number_integer()) << o.text;
    for (const auto& [k, v] : j.items()) EXPECT_TRUE(k == "name" || k == "n" || k == "tags") << k;
  }
}

TEST(StructuredOutput, ConstrainedRequestLeavesOthersUnchanged) {
  const DemoModel m;
  auto alone =
      m.engine()->generate({sampled(*m.tokenizer, "The dog", 11, 24), sampled(*m.tokenizer, "A tree", 12, 24)});
  std::vector<GenerationRequest> mixed{sampled(*m.tokenizer, "The dog", 11, 24),
                                       sampled(*m.tokenizer, "The cat", 5, 24),
                                       sampled(*m.tokenizer, "A tree", 12, 24)};
  mixed[1].grammar = compile_json_object();
  auto together = m.engine()->generate(std::move(mixed));
  EXPECT_EQ(together[0].ids, alone[0].ids);
  EXPECT_EQ(together[2].ids, alone[1].ids);
  EXPECT_EQ(together[1].text.rfind('{', 0), 0u) << together[1].text;
}

TEST(StructuredOutput, CompleteValueForcesEosAndGreedyWorks) {
  const DemoModel m;
  GenerationRequest r = sampled(*m.tokenizer, "The cat", 0, 32);
  r.sampling.temperature = 0.0f;
  r.grammar = compile_json_schema_text(R"({"enum":["yes","no"]})");
  const auto out = m.engine()->generate({r});
  EXPECT_EQ(out[0].finish_reason, FinishReason::Stop);
  EXPECT_TRUE(out[0].text == "\"yes\"" || out[0].text == "\"no\"") << out[0].text;

  r.ignore_eos = true;  // no stop token: the engine ends the request itself once nothing may follow
  const auto out2 = m.engine()->generate({r});
  EXPECT_EQ(out2[0].finish_reason, FinishReason::Stop);
  EXPECT_EQ(out2[0].text, out[0].text);
}

}  // namespace
}  // namespace opchain
