#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opchain {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
const std::vector<int32_t> kNone;

SamplingParams seeded(uint64_t seed = 42) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

std::vector<float> log_probs(std::vector<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature = 1.0) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> out;
  for (float l : logits) out.push_back(std::exp((l - mx) / temperature));
  const double sum = std::accumulate(out.begin(), out.end(), 0.0);
  for (double& v : out) v /= sum;
  return out;
}

std::set<int32_t> support(const std::vector<float>& probs) {
  std::set<int32_t> s;
  for (size_t i = 0; i < probs.size(); ++i)
    if (probs[i] > 0.0f) s.insert(static_cast<int32_t>(i));
  return s;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 1000;  // filters are irrelevant to greedy
  p.top_p = 0.1f;
  Sampler s(p);
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.0f}, kNone, kNone), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 5.0f, 5.0f}, kNone, kNone), 1);
  EXPECT_EQ(s.sample(std::vector<float>{kNegInf, kNegInf, -100.0f}, kNone, kNone), 2);
  EXPECT_TRUE(p.greedy());
  p.temperature = 1e-6f;  // below vLLM's epsilon: greedy too
  EXPECT_TRUE(p.greedy());
}

TEST(Sampler, TemperatureScalesTheSoftmax) {
  SamplingParams p = seeded();
  p.temperature = 2.0f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  const auto probs = s.probabilities(logits, kNone, kNone);
  const auto want = softmax(logits, 2.0);
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(probs[i], want[i], 1e-6) << i;
}

TEST(Sampler, TopKKeepsTheKLargestAndBoundaryTies) {
  SamplingParams p = seeded();
  p.top_k = 2;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 4.0f, 0.0f, 3.0f, 2.0f};
  const auto probs = s.probabilities(logits, kNone, kNone);
  EXPECT_EQ(support(probs), (std::set<int32_t>{1, 3}));
  const double z = std::exp(4.0) + std::exp(3.0);
  EXPECT_NEAR(probs[1], std::exp(4.0) / z, 1e-6);
  EXPECT_NEAR(probs[3], std::exp(3.0) / z, 1e-6);

  // HF keeps every token whose logit equals the k-th largest.
  p.top_k = 2;
  Sampler t(p);
  EXPECT_EQ(support(t.probabilities(std::vector<float>{3.0f, 1.0f, 2.0f, 2.0f, 2.0f}, kNone, kNone)),
            (std::set<int32_t>{0, 2, 3, 4}));
  // k at or past the vocabulary, and k <= 0, disable the filter.
  for (int k : {5, 100, 0, -1}) {
    p.top_k = k;
    Sampler u(p);
    EXPECT_EQ(support(u.probabilities(logits, kNone, kNone)).size(), 5u) << k;
  }
}

TEST(Sampler, TopPKeepsTheSmallestHeadReachingP) {
  const auto logits = log_probs({0.15, 0.5, 0.05, 0.3});
  auto kept = [&](float top_p) {
    SamplingParams p = seeded();
    p.top_p = top_p;
    Sampler s(p);
    return support(s.probabilities(logits, kNone, kNone));
  };
  EXPECT_EQ(kept(0.4f), (std::set<int32_t>{1}));         // 0.5 alone crosses 0.4
  EXPECT_EQ(kept(0.75f), (std::set<int32_t>{1, 3}));     // 0.5 + 0.3 crosses 0.75
  EXPECT_EQ(kept(0.85f), (std::set<int32_t>{0, 1, 3}));  // + 0.15
  EXPECT_EQ(kept(0.99f), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(kept(1.0f), (std::set<int32_t>{0, 1, 2, 3}));

  SamplingParams p = seeded();
  p.top_p = 0.75f;
  Sampler s(p);
  const auto probs = s.probabilities(logits, kNone, kNone);
  EXPECT_NEAR(probs[1], 0.5 / 0.8, 1e-6);  // renormalised over the kept set
  EXPECT_NEAR(probs[3], 0.3 / 0.8, 1e-6);
}

// The histogram gather (no top-k) and the chunked nth_element (after top-k) must agree with a full
// sort on a realistic vocabulary.
TEST(Sampler, TopPOnLargeVocabMatchesFullSort) {
  constexpr size_t kVocab = 151936;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = nd(rng);

  struct Case {
    int top_k;
    float top_p;
    float temperature;
  };
  for (const Case& c : {Case{0, 0.5f, 1.0f}, Case{0, 0.9f, 0.7f}, Case{20000, 0.9f, 1.3f}}) {
    SamplingParams p = seeded();
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.temperature = c.temperature;
    Sampler s(p);
    const auto got = support(s.probabilities(logits, kNone, kNone));

    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    std::vector<float> head;  // top-k first, then the softmax over what is left
    for (size_t i = 0; i < (c.top_k > 0 ? static_cast<size_t>(c.top_k) : kVocab); ++i) head.push_back(logits[order[i]]);
    const auto probs = softmax(head, c.temperature);
    std::set<int32_t> want;
    double before = 0.0;
    for (size_t i = 0; i < probs.size() && before < c.top_p; ++i) {
      want.insert(order[i]);
      before += probs[i];
    }
    EXPECT_GT(want.size(), 64u) << "the test should exercise more than one chunk";
    EXPECT_EQ(got, want) << "top_k " << c.top_k << " top_p " << c.top_p;
  }
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTheMax) {
  const auto logits = log_probs({0.15, 0.5, 0.05, 0.3});
  auto kept = [&](float min_p) {
    SamplingParams p = seeded();
    p.min_p = min_p;
    Sampler s(p);
    return support(s.probabilities(logits, kNone, kNone));
  };
  EXPECT_EQ(kept(0.2f), (std::set<int32_t>{0, 1, 3}));  // threshold 0.1
  EXPECT_EQ(kept(0.5f), (std::set<int32_t>{1, 3}));     // threshold 0.25
  EXPECT_EQ(kept(1.0f), (std::set<int32_t>{1}));
}

TEST(Sampler, FiltersComposeInHfOrder) {
  // temperature 0.5 sharpens {0.4, 0.3, 0.2, 0.1} to p^2 normalised = {16, 9, 4, 1}/30.
  SamplingParams p = seeded();
  p.temperature = 0.5f;
  p.top_k = 3;     // drops 1/30
  p.top_p = 0.8f;  // over {16,9,4}/29: 16/29 = 0.55 < 0.8, so 9/29 is kept; 25/29 >= 0.8 drops 4/29
  p.min_p = 0.6f;  // 9/16 = 0.5625 < 0.6 drops it too
  Sampler s(p);
  EXPECT_EQ(support(s.probabilities(log_probs({0.4, 0.3, 0.2, 0.1}), kNone, kNone)), (std::set<int32_t>{0}));
  p.min_p = 0.5f;
  Sampler t(p);
  const auto probs = t.probabilities(log_probs({0.4, 0.3, 0.2, 0.1}), kNone, kNone);
  EXPECT_EQ(support(probs), (std::set<int32_t>{0, 1}));
  EXPECT_NEAR(probs[0], 16.0 / 25.0, 1e-5);
}

TEST(Sampler, MaskedTokensAreNeverSampled) {
  Sampler s(seeded());
  const std::vector<float> logits = {kNegInf, 0.0f, kNegInf, 0.0f};
  for (int i = 0; i < 200; ++i) {
    const int32_t id = s.sample(logits, kNone, kNone);
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
}

TEST(Sampler, SameSeedSameSequence) {
  std::vector<float> logits(1000);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-2.0f, 2.0f);
  for (float& l : logits) l = ud(rng);
  SamplingParams p = seeded(7);
  p.top_p = 0.95f;
  Sampler a(p), b(p);
  p.seed = 8;
  Sampler c(p);
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 50; ++i) {
    sa.push_back(a.sample(logits, kNone, sa));
    sb.push_back(b.sample(logits, kNone, sb));
    sc.push_back(c.sample(logits, kNone, sc));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(Sampler, RepetitionPenaltyHfSemanticsOverPromptAndOutputOnce) {
  SamplingParams p = seeded();
  p.repetition_penalty = 2.0f;
  Sampler s(p);
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f};
  const std::vector<int32_t> prompt = {0, 0, 0};  // repeated: still divided once
  const std::vector<int32_t> output = {1, 1};
  const auto probs = s.probabilities(logits, prompt, output);
  const std::vector<float> want = {1.0f, -4.0f, 1.0f, 0.5f};
  const auto ref = softmax(want);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(probs[i], ref[i], 1e-6) << i;
}

TEST(Sampler, PresenceAndFrequencyPenaltiesUseOutputOnly) {
  SamplingParams p = seeded();
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> prompt = {1};        // prompt ids are not penalised
  const std::vector<int32_t> output = {2, 3, 2};  // id 2 twice, id 3 once
  for (int round = 0; round < 2; ++round) {       // a second call must not see stale counts
    const auto probs = s.probabilities(logits, prompt, output);
    const auto ref = softmax({1.0f, 1.0f, 1.0f - 1.0f, 1.0f - 0.75f});
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(probs[i], ref[i], 1e-6) << i << " round " << round;
  }
}

TEST(Sampler, PenaltiesChangeTheGreedyChoice) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  Sampler s(p);
  const std::vector<float> logits = {3.0f, 2.5f};
  EXPECT_EQ(s.sample(logits, kNone, kNone), 0);
  EXPECT_EQ(s.sample(logits, std::vector<int32_t>{0}, kNone), 1);  // 3/1.5 = 2 < 2.5
}

TEST(Sampler, PenalisedIdsOutsideTheVocabularyThrow) {
  SamplingParams p = seeded();
  const std::vector<float> logits = {1.0f, 2.0f};
  const std::vector<int32_t> bad = {0, 5};
  Sampler plain(p);
  EXPECT_NO_THROW(plain.sample(logits, bad, bad));  // no penalty: ids are not read
  p.repetition_penalty = 1.1f;
  Sampler rep(p);
  EXPECT_NE(error_of([&] { rep.sample(logits, bad, kNone); }).find("prompt token id 5 at position 1"),
            std::string::npos);
  p.repetition_penalty = 1.0f;
  p.frequency_penalty = 0.1f;
  Sampler freq(p);
  EXPECT_THROW(freq.sample(logits, kNone, std::vector<int32_t>{-1}), InvalidArgumentError);
  EXPECT_NO_THROW(freq.sample(logits, bad, kNone));  // presence/frequency ignore the prompt
}

TEST(Sampler, BadLogitsThrow) {
  Sampler s(seeded());
  EXPECT_THROW(s.sample(std::vector<float>{}, kNone, kNone), InvalidArgumentError);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, std::nanf("")}, kNone, kNone), InvalidArgumentError);
  EXPECT_THROW(s.sample(std::vector<float>{0.0f, std::numeric_limits<float>::infinity()}, kNone, kNone),
               InvalidArgumentError);
  EXPECT_NE(error_of([&] {
              s.sample(std::vector<float>{kNegInf, kNegInf}, kNone, kNone);
            }).find("-inf"),
            std::string::npos);
}

TEST(SamplingParams, ValidationNamesTheField) {
  auto msg = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return error_of([&] { p.validate(); });
  };
  EXPECT_NE(msg([](SamplingParams& p) { p.temperature = -0.1f; }).find("temperature"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.temperature = std::nanf(""); }).find("temperature"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.top_p = 0.0f; }).find("top_p"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.top_p = 1.5f; }).find("top_p"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.min_p = -0.1f; }).find("min_p"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.min_p = 1.1f; }).find("min_p"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.repetition_penalty = 0.0f; }).find("repetition_penalty"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.presence_penalty = 3.0f; }).find("presence_penalty"), std::string::npos);
  EXPECT_NE(msg([](SamplingParams& p) { p.frequency_penalty = -2.5f; }).find("frequency_penalty"), std::string::npos);
  EXPECT_EQ(msg([](SamplingParams&) {}), "<no error>");
  SamplingParams bad;
  bad.top_p = 2.0f;
  EXPECT_THROW(Sampler{bad}, InvalidArgumentError);
}

TEST(SamplingParams, FromGenerationConfig) {
  auto p = SamplingParams::from_generation_config(nlohmann::json::parse(
      R"({"do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "min_p": 0.05,
          "repetition_penalty": 1.05, "eos_token_id": [1, 2]})"));
  EXPECT_FLOAT_EQ(p.temperature, 0.7f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_FLOAT_EQ(p.top_p, 0.8f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.05f);
  EXPECT_FALSE(p.greedy());

  // do_sample false: greedy, but the repetition penalty still applies (HF).
  p = SamplingParams::from_generation_config(
      nlohmann::json::parse(R"({"do_sample": false, "temperature": 0.6, "repetition_penalty": 1.2})"));
  EXPECT_TRUE(p.greedy());
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.2f);

  // Absent or null fields keep the defaults.
  p = SamplingParams::from_generation_config(nlohmann::json::parse(R"({"top_k": null})"));
  EXPECT_FLOAT_EQ(p.temperature, 1.0f);
  EXPECT_EQ(p.top_k, 0);

  EXPECT_THROW(SamplingParams::from_generation_config(nlohmann::json::parse(R"([1])")), FormatError);
  EXPECT_NE(error_of([] {
              SamplingParams::from_generation_config(nlohmann::json::parse(R"({"top_p": "0.9"})"));
            }).find("\"top_p\" must be a number"),
            std::string::npos);
  EXPECT_THROW(SamplingParams::from_generation_config(nlohmann::json::parse(R"({"top_k": 2.5})")), FormatError);
  EXPECT_THROW(SamplingParams::from_generation_config(nlohmann::json::parse(R"({"do_sample": 1})")), FormatError);
  EXPECT_NE(error_of([] {
              SamplingParams::from_generation_config(nlohmann::json::parse(R"({"top_p": 1.5})"));
            }).find("generation_config: SamplingParams.top_p"),
            std::string::npos);
}

// Temperature-1 sampling must reproduce the softmax: 20000 draws, each frequency within 4.5 sigma.
TEST(Sampler, FrequenciesMatchSoftmax) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, -1.0f};
  const auto want = softmax(logits);
  Sampler s(seeded(2024));
  constexpr int kDraws = 20000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(s.sample(logits, kNone, kNone))];
  for (size_t i = 0; i < 4; ++i) {
    const double sigma = std::sqrt(want[i] * (1 - want[i]) / kDraws);
    EXPECT_NEAR(static_cast<double>(counts[i]) / kDraws, want[i], 4.5 * sigma) << "token " << i;
  }
}

TEST(Sampler, LargeVocabTopKDrawsFromTheTopK) {
  constexpr size_t kVocab = 151936;
  std::vector<float> logits(kVocab);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (float& l : logits) l = nd(rng);
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + 49, sorted.end(), std::greater<>());
  const float kth = sorted[49];

  SamplingParams p = seeded();
  p.top_k = 50;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  Sampler s(p);
  std::vector<int32_t> out;
  for (int i = 0; i < 20; ++i) {
    const int32_t id = s.sample(logits, kNone, kNone);
    ASSERT_GE(logits[static_cast<size_t>(id)], kth);
    out.push_back(id);
  }
}

}  // namespace
}  // namespace opchain
