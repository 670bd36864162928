// The engine end to end on the golden models: greedy continuations equal the reference ones, a
// request's tokens do not depend on what else is batched with it, preemption and chunked prefill
// change nothing, and stops, lengths and bad requests behave as a user expects.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/tokenizer.h"
#include "test_paths.h"
#include "vendors/cpu_paths.h"

namespace opchain {
namespace {

std::vector<int32_t> parse_csv_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) ids.push_back(static_cast<int32_t>(std::stol(tok)));
  return ids;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Fixture {
  LoadedModel model;
  std::optional<Tokenizer> tokenizer;
  std::unique_ptr<LLMEngine> engine;
  Fixture(const std::string& name, const std::string& vendor, EngineConfig cfg = {},
          PrecisionChoice precision = PrecisionChoice::F32) {
    const std::string dir = test::model_dir(name);
    model = load_model(dir, vendor, {}, precision);
    tokenizer = Tokenizer::from_file(dir + "/tokenizer.json");
    const auto defaults = load_generation_defaults(dir, model.config.eos_token_ids);
    engine = std::make_unique<LLMEngine>(*model.model, model.device, &*tokenizer, cfg, defaults.eos_ids);
  }
};

GenerationRequest greedy(std::vector<int32_t> prompt, int64_t max_new, bool ignore_eos = true) {
  GenerationRequest r;
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.max_new_tokens = max_new;
  r.ignore_eos = ignore_eos;
  return r;
}

class GreedyGolden : public testing::TestWithParam<std::string> {};

TEST_P(GreedyGolden, ContinuationMatchesGreedyTxt) {
  const std::string dir = test::model_dir(GetParam());
  const auto prompt = parse_csv_ids(read_file(dir + "/ids.txt"));
  std::istringstream greedy_txt(read_file(dir + "/greedy.txt"));
  std::string line;
  std::getline(greedy_txt, line);
  ASSERT_EQ(line.rfind("ids: ", 0), 0u);
  const auto expected = parse_csv_ids(line.substr(5));
  for (const char* vendor : {"cpu", "reference"}) {
    Fixture f(GetParam(), vendor);
    const auto out = f.engine->generate({greedy(prompt, static_cast<int64_t>(expected.size()))});
    EXPECT_EQ(out[0].ids, expected) << vendor;
    EXPECT_EQ(out[0].finish_reason, FinishReason::Length);
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, GreedyGolden,
                         testing::Values("tiny-qwen3-moe", "tiny-qwen3-dense", "tiny-llama", "tiny-qwen2-moe",
                                         "tiny-qwen3-next", "tiny-qwen3_5-moe", "tiny-qwen3_5-moe-vl", "tiny-qwen3_5"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(TrainedModel, GreedyJsonAllPromptsTogether) {
  const auto cases = nlohmann::json::parse(read_file(test::model_dir("trained-qwen3-moe") + "/greedy.json"));
  Fixture f("trained-qwen3-moe", "cpu");
  std::vector<GenerationRequest> reqs;
  for (const auto& c : cases) reqs.push_back(greedy(c["prompt_ids"].get<std::vector<int32_t>>(), 40));
  const auto outs = f.engine->generate(std::move(reqs));
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(outs[i].ids, cases[i]["ids"].get<std::vector<int32_t>>()) << cases[i]["prompt"];
    // With ignore_eos the text keeps going past <|endoftext|>, which is special and skipped.
    EXPECT_EQ(outs[i].completion_tokens, 40);
  }
}

TEST(TrainedModel, TheCatStopsAtEos) {
  Fixture f("trained-qwen3-moe", "cpu");
  GenerationRequest r = greedy(f.tokenizer->encode("The cat"), 64, /*ignore_eos=*/false);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{51, 262, 1220}));
  const auto out = f.engine->generate({r});
  EXPECT_EQ(out[0].text, " is a United States writer (1919-1997).");
  EXPECT_EQ(out[0].finish_reason, FinishReason::Stop);
  EXPECT_EQ(out[0].ids.back(), 4093);  // the eos id that stopped it
  EXPECT_EQ(out[0].prompt_tokens, 3);
}

// Kernels are batch-invariant: N prompts generated together give exactly the tokens each gives alone.
TEST(Batching, TogetherEqualsAlone) {
  Fixture f("trained-qwen3-moe", "cpu");
  const std::vector<std::string> prompts = {"The cat",  "A river is", "music is", "The law of the land",
                                            "An apple", "A dog is a", "Paris",    "The theory of"};
  std::vector<GenerationRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(greedy(f.tokenizer->encode(p), 24));
  const auto together = f.engine->generate(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto alone = f.engine->generate({reqs[i]});
    EXPECT_EQ(alone[0].ids, together[i].ids) << prompts[i];
  }
}

// Every chosen and top logprob of two runs, bit for bit.
void expect_same_logprobs(const RequestOutput& got, const RequestOutput& want, const std::string& what) {
  ASSERT_EQ(got.ids, want.ids) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t t = 0; t < got.logprobs.size(); ++t) {
    const StepLogprobs &a = got.logprobs[t], &b = want.logprobs[t];
    EXPECT_EQ(std::memcmp(&a.chosen.logprob, &b.chosen.logprob, sizeof(float)), 0)
        << what << " token " << t << ": " << a.chosen.logprob << " != " << b.chosen.logprob;
    ASSERT_EQ(a.top.size(), b.top.size()) << what << " token " << t;
    for (size_t j = 0; j < a.top.size(); ++j) {
      EXPECT_EQ(a.top[j].id, b.top[j].id) << what << " token " << t << " top " << j;
      EXPECT_EQ(std::memcmp(&a.top[j].logprob, &b.top[j].logprob, sizeof(float)), 0)
          << what << " token " << t << " top " << j;
    }
  }
}

// Requests joining mid-way (continuous batching) do not disturb the ones already running, nor are they
// disturbed: every logprob is the one each request gets alone, bit for bit, at both precisions (a bf16
// KV cache at Bf16), on every cpu path, eager or replaying decode graphs (Note [Graph capture]: a
// bucket's padding rows beside the real ones). The joining prompt prefills, whole or in chunks, in steps
// where the other sequence decodes: those steps run a prefill attention over the cache with a
// single-query sequence in it, where the request alone runs a plain prefill, then decode steps (and,
// in the hybrid models' linear-attention layers, the chunked delta rule beside a one-token sequence).
class JoiningMidway : public testing::TestWithParam<PrecisionChoice> {};

TEST_P(JoiningMidway, ChangesNoLogprob) {
  harness::CpuPathGuard guard;
  EngineConfig chunked, graphs;
  chunked.prefill_chunk = 3;
  chunked.max_tokens_per_step = 5;
  graphs.graph = true;
  for (const harness::CpuPath& path : harness::cpu_paths())
    for (const EngineConfig& cfg : {EngineConfig{}, chunked, graphs}) {
      SCOPED_TRACE(path.name);
      ASSERT_TRUE(harness::select_path(path));
      for (const char* model : {"trained-qwen3-moe", "tiny-qwen3_5", "tiny-qwen3-next"}) {
        SCOPED_TRACE(model);
        Fixture f(model, "cpu", cfg, GetParam());
        auto a = greedy(f.tokenizer->encode("The cat"), 30),
             b = greedy(f.tokenizer->encode("The theory of relativity is a branch of physics that"), 20);
        a.logprobs = b.logprobs = 5;
        const auto alone_a = f.engine->generate({a})[0], alone_b = f.engine->generate({b})[0];
        const uint64_t ida = f.engine->add_request(a);
        for (int i = 0; i < 7; ++i) f.engine->step();
        const uint64_t idb = f.engine->add_request(b);
        while (f.engine->step()) {
        }
        const std::string how = cfg.prefill_chunk == 3 ? "chunked" : cfg.graph ? "graph-mode, whole" : "whole";
        expect_same_logprobs(*f.engine->take_output(ida), alone_a, "decoding request, " + how + " prefill beside it");
        expect_same_logprobs(*f.engine->take_output(idb), alone_b, "joining request, " + how + " prefill");
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, JoiningMidway, testing::Values(PrecisionChoice::F32, PrecisionChoice::Bf16),
                         [](const auto& info) { return info.param == PrecisionChoice::F32 ? "F32" : "Bf16"; });

// A sequence preempted under a tiny KV budget recomputes its cache in one prefill-like step; its tokens
// past the prompt take the decode path again there (SequenceStep::decoded_from), so every logprob equals
// the roomy run's, bit for bit, at both precisions, on every cpu path, eager or replaying decode graphs,
// hybrid models included.
TEST(Batching, PreemptionUnderATinyKvBudgetGivesTheSameLogprobs) {
  harness::CpuPathGuard guard;
  EngineConfig roomy;
  EngineConfig tight;
  tight.block_size = 4;
  tight.num_blocks = 1 + 14;  // 56 tokens for 4 sequences that each need up to ~36
  for (const harness::CpuPath& path : harness::cpu_paths())
    for (PrecisionChoice precision : {PrecisionChoice::F32, PrecisionChoice::Bf16})
      for (const char* model : {"trained-qwen3-moe", "tiny-qwen3_5"}) {
        SCOPED_TRACE(path.name + " " + model);
        ASSERT_TRUE(harness::select_path(path));
        EngineConfig tight_graphs = tight;
        tight_graphs.graph = true;
        Fixture a(model, "cpu", roomy, precision), b(model, "cpu", tight, precision),
            c(model, "cpu", tight_graphs, precision);
        std::vector<GenerationRequest> reqs;
        for (const char* p : {"The cat", "A river is", "music is", "An apple"}) {
          reqs.push_back(greedy(a.tokenizer->encode(p), 32));
          reqs.back().logprobs = 5;
        }
        const auto expected = a.engine->generate(reqs);
        for (Fixture* f : {&b, &c}) {
          const auto got = f->engine->generate(reqs);
          EXPECT_GT(f->engine->stats().preemptions, 0);
          for (size_t i = 0; i < reqs.size(); ++i)
            expect_same_logprobs(got[i], expected[i],
                                 "request " + std::to_string(i) + (f == &c ? ", decode graphs" : ""));
          EXPECT_EQ(f->engine->stats().blocks_used, 0);  // everything freed at the end
        }
      }
}

// A prompt prefilled in chunks of 3 gets every logprob it gets in one piece, bit for bit, at both
// precisions and on every cpu path: each query's attention is over the same cached keys in the same
// absolute kv chunks, whichever step it falls in (how a prompt is cut depends on the load), and in the
// hybrid models' linear-attention layers every token walks the state as a decode step does.
TEST(Batching, ChunkedPrefillGivesTheSameLogprobs) {
  harness::CpuPathGuard guard;
  EngineConfig chunked;
  chunked.prefill_chunk = 3;
  chunked.max_tokens_per_step = 5;
  for (const harness::CpuPath& path : harness::cpu_paths())
    for (PrecisionChoice precision : {PrecisionChoice::F32, PrecisionChoice::Bf16}) {
      SCOPED_TRACE(path.name);
      ASSERT_TRUE(harness::select_path(path));
      for (const char* model : {"trained-qwen3-moe", "tiny-qwen3_5", "tiny-qwen3-next"}) {
        SCOPED_TRACE(model);
        Fixture a(model, "cpu", {}, precision), b(model, "cpu", chunked, precision);
        auto r = greedy(a.tokenizer->encode("The theory of relativity is a branch of physics that"), 20);
        r.logprobs = 5;
        expect_same_logprobs(b.engine->generate({r, r})[1], a.engine->generate({r})[0],
                             precision == PrecisionChoice::F32 ? "F32" : "Bf16");
      }
    }
}

TEST(Stops, StopStringTruncatesTextAndReportsStop) {
  Fixture f("trained-qwen3-moe", "cpu");
  GenerationRequest r = greedy(f.tokenizer->encode("The cat"), 64, false);
  r.stop = {"States"};
  const auto out = f.engine->generate({r})[0];
  EXPECT_EQ(out.text, " is a United ");
  EXPECT_EQ(out.finish_reason, FinishReason::Stop);
}

TEST(Stops, MaxNewTokensReportsLength) {
  Fixture f("trained-qwen3-moe", "cpu");
  const auto out = f.engine->generate({greedy(f.tokenizer->encode("The cat"), 3, false)})[0];
  EXPECT_EQ(out.completion_tokens, 3);
  EXPECT_EQ(out.finish_reason, FinishReason::Length);
  EXPECT_EQ(out.text, " is a United");
}

TEST(Stops, StreamedDeltasEqualTheFinalText) {
  Fixture f("trained-qwen3-moe", "cpu");
  std::string streamed;
  bool finished = false;
  GenerationRequest r = greedy(f.tokenizer->encode("music is"), 40);
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 7;
  f.engine->add_request(r, [&](const StreamEvent& ev) {
    streamed += ev.text_delta;
    finished = finished || ev.finished;
  });
  while (f.engine->step()) {
  }
  EXPECT_TRUE(finished);
  EXPECT_EQ(streamed, f.engine->generate({r})[0].text);  // same seed, same output
}

TEST(Sampling, SameSeedSameOutputDifferentSeedsDiffer) {
  Fixture f("trained-qwen3-moe", "cpu");
  GenerationRequest r = greedy(f.tokenizer->encode("A dog is a"), 30);
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = 1;
  const auto one = f.engine->generate({r, r});
  EXPECT_EQ(one[0].ids, one[1].ids);
  std::set<std::vector<int32_t>> distinct;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    r.sampling.seed = seed;
    distinct.insert(f.engine->generate({r})[0].ids);
  }
  EXPECT_GT(distinct.size(), 1u);
}

TEST(Requests, ContextAndInputErrorsAreClear) {
  Fixture f("tiny-llama", "cpu");  // max_position_embeddings 512
  auto message = [&](GenerationRequest r) {
    try {
      f.engine->add_request(std::move(r));
    } catch (const InvalidArgumentError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(greedy(std::vector<int32_t>(500, 5), 13)).find("exceeds the model's context of 512"),
            std::string::npos);
  EXPECT_NE(message(greedy({}, 4)).find("empty"), std::string::npos);
  EXPECT_NE(message(greedy({1, 99999}, 4)).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(message(greedy({1, 2}, 0)).find("max_new_tokens"), std::string::npos);
  GenerationRequest bad = greedy({1, 2}, 4);
  bad.sampling.top_p = 2.0f;
  EXPECT_NE(message(bad).find("top_p"), std::string::npos);
  EXPECT_FALSE(f.engine->has_work());
}

TEST(Requests, AbortFreesBlocksAndReportsAbort) {
  Fixture f("trained-qwen3-moe", "cpu");
  FinishReason reason = FinishReason::None;
  const uint64_t id = f.engine->add_request(greedy(f.tokenizer->encode("The cat"), 200), [&](const StreamEvent& ev) {
    if (ev.finished) reason = ev.finish_reason;
  });
  for (int i = 0; i < 5; ++i) f.engine->step();
  EXPECT_GT(f.engine->stats().blocks_used, 0);
  f.engine->abort(id);
  while (f.engine->step()) {
  }
  EXPECT_EQ(reason, FinishReason::Aborted);
  EXPECT_EQ(f.engine->stats().blocks_used, 0);
}

TEST(Requests, FullQueueRefuses) {
  EngineConfig cfg;
  cfg.max_queue = 2;
  Fixture f("tiny-qwen3-moe", "cpu", cfg);
  f.engine->add_request(greedy({1, 2}, 2));
  f.engine->add_request(greedy({1, 2}, 2));
  EXPECT_THROW(f.engine->add_request(greedy({1, 2}, 2)), QueueFullError);
  while (f.engine->step()) {
  }
}

// The tokenizer and chat template together give Hugging Face's prompt ids for every golden case.
TEST(ChatPipeline, TemplateThenTokenizerGivesExpectedIds) {
  const std::string dir = test::data_dir() + "/tokenizer";
  const Tokenizer tok = Tokenizer::from_file(dir + "/qwen3/tokenizer.json");
  const ChatTemplate tmpl = ChatTemplate::from_model_dir(dir + "/qwen3");
  const auto cases = nlohmann::ordered_json::parse(read_file(dir + "/chat_template_cases.json"));
  std::ifstream in(dir + "/chat_template_expected.jsonl");
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    const auto expected = nlohmann::json::parse(line);
    const auto& c = cases.at(n++);
    ASSERT_EQ(c["name"], expected["name"]);
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.key() != "name" && it.key() != "messages" && it.key() != "tools" && it.key() != "add_generation_prompt")
        extra[it.key()] = it.value();
    const std::string prompt = tmpl.render(c["messages"], c.contains("tools") ? c["tools"] : nlohmann::ordered_json(),
                                           c.value("add_generation_prompt", false), extra);
    EXPECT_EQ(prompt, expected["prompt"].get<std::string>()) << c["name"];
    EXPECT_EQ(tok.encode(prompt), expected["ids"].get<std::vector<int32_t>>()) << c["name"];
  }
  EXPECT_EQ(n, 14u);
}

}  // namespace
}  // namespace opchain
