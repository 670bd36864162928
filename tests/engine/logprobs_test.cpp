// Token log-probabilities: the log-softmax of the model's logits for the chosen token and the most
// likely ones, against the golden reference logits; the same whole or streamed, alone or batched.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "engine/logprobs.h"
#include "io/npy.h"
#include "io/tokenizer.h"
#include "test_paths.h"

namespace opchain {
namespace {

TEST(StepLogprobs, LogSoftmaxOfTheRow) {
  const std::vector<float> row = {1.0f, 3.0f, 2.0f, 3.0f, -1e30f};
  const StepLogprobs lp = step_logprobs(row, 2, 3);
  double z = 0;
  for (float v : row) z += std::exp(static_cast<double>(v));
  EXPECT_NEAR(lp.chosen.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].id, 1);  // a tie goes to the lower id
  EXPECT_EQ(lp.top[1].id, 3);
  EXPECT_EQ(lp.top[2].id, 2);
  EXPECT_EQ(lp.top[2].logprob, lp.chosen.logprob);
  EXPECT_TRUE(step_logprobs(row, 0, 0).top.empty());
  EXPECT_EQ(step_logprobs(row, 0, 20).top.size(), row.size());  // never more than the vocabulary
}

struct Fixture {
  LoadedModel model;
  std::optional<Tokenizer> tokenizer;
  std::unique_ptr<LLMEngine> engine;
  explicit Fixture(const std::string& name) {
    const std::string dir = test::model_dir(name);
    model = load_model(dir, "cpu");
    tokenizer = Tokenizer::from_file(dir + "/tokenizer.json");
    const auto defaults = load_generation_defaults(dir, model.config.eos_token_ids);
    engine = std::make_unique<LLMEngine>(*model.model, model.device, &*tokenizer, EngineConfig{}, defaults.eos_ids);
  }
};

std::vector<int32_t> golden_prompt(const std::string& name) {
  std::ifstream in(test::model_dir(name) + "/ids.txt");
  std::vector<int32_t> ids;
  std::string tok;
  while (std::getline(in, tok, ',')) ids.push_back(static_cast<int32_t>(std::stol(tok)));
  return ids;
}

TEST(EngineLogprobs, FirstTokenMatchesTheReferenceLogits) {
  const std::string name = "tiny-qwen3-moe";
  Fixture f(name);
  GenerationRequest r;
  r.prompt_ids = golden_prompt(name);
  r.sampling.temperature = 0.0f;
  r.max_new_tokens = 1;
  r.ignore_eos = true;
  r.logprobs = 5;
  const RequestOutput out = f.engine->generate({r})[0];
  ASSERT_EQ(out.logprobs.size(), 1u);
  const NpyArray ref = read_npy_f32(test::model_dir(name) + "/ref_logits.npy");
  const int64_t vocab = ref.shape[1];
  const std::span<const float> last(ref.data.data() + (ref.shape[0] - 1) * vocab, static_cast<size_t>(vocab));
  const StepLogprobs want = step_logprobs(last, out.ids[0], 5);
  EXPECT_EQ(out.logprobs[0].chosen.id, out.ids[0]);
  EXPECT_NEAR(out.logprobs[0].chosen.logprob, want.chosen.logprob, 1e-3);
  ASSERT_EQ(out.logprobs[0].top.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(out.logprobs[0].top[i].id, want.top[i].id) << i;
    EXPECT_NEAR(out.logprobs[0].top[i].logprob, want.top[i].logprob, 1e-3) << i;
  }
}

TEST(EngineLogprobs, OnePerOutputTokenStreamedAloneOrBatched) {
  Fixture f("trained-qwen3-moe");
  GenerationRequest r;
  r.prompt_ids = f.tokenizer->encode("The cat");
  r.sampling.temperature = 0.0f;
  r.max_new_tokens = 64;
  r.logprobs = 3;
  const RequestOutput alone = f.engine->generate({r})[0];
  ASSERT_EQ(alone.finish_reason, FinishReason::Stop);
  ASSERT_EQ(alone.logprobs.size(), alone.ids.size() - 1);  // the eos that stopped it has none
  for (size_t i = 0; i < alone.logprobs.size(); ++i) {
    EXPECT_EQ(alone.logprobs[i].chosen.id, alone.ids[i]);
    EXPECT_EQ(alone.logprobs[i].top[0].id, alone.ids[i]);  // greedy: the most likely
    EXPECT_EQ(alone.logprobs[i].top[0].logprob, alone.logprobs[i].chosen.logprob);
    EXPECT_LE(alone.logprobs[i].chosen.logprob, 0.0f);
  }

  std::vector<StepLogprobs> streamed;
  f.engine->add_request(
      r, [&](const StreamEvent& ev) { streamed.insert(streamed.end(), ev.logprobs.begin(), ev.logprobs.end()); });
  GenerationRequest other = r;
  other.prompt_ids = f.tokenizer->encode("music is");
  other.logprobs = -1;
  f.engine->add_request(other);
  while (f.engine->step()) {
  }
  ASSERT_EQ(streamed.size(), alone.logprobs.size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i].chosen.id, alone.logprobs[i].chosen.id);
    EXPECT_EQ(streamed[i].chosen.logprob, alone.logprobs[i].chosen.logprob) << i;  // batched: the same bits
  }
}

TEST(EngineLogprobs, OutOfRangeIsRefused) {
  Fixture f("trained-qwen3-moe");
  GenerationRequest r;
  r.prompt_ids = {51, 262};
  r.logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(f.engine->add_request(r), InvalidArgumentError);
  r.logprobs = -2;
  EXPECT_THROW(f.engine->add_request(r), InvalidArgumentError);
}

}  // namespace
}  // namespace opchain
