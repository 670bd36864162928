// Token masks: the trie walk equals a brute-force check of every token's bytes on small
// vocabularies; stop tokens appear exactly when the text is complete; the matcher rejects what the
// mask excludes; left recursion is reported.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "core/error.h"
#include "engine/grammar_matcher.h"
#include "engine/json_schema_grammar.h"
#include "engine/sampler.h"
#include "engine/token_vocabulary.h"

namespace opchain {
namespace {

bool bit(const std::vector<uint64_t>& m, size_t id) { return (m[id >> 6] >> (id & 63)) & 1u; }

std::vector<std::string> random_vocabulary(uint64_t seed) {
  // Pieces of JSON, some shared prefixes, duplicates and an empty (special) token.
  const std::vector<std::string> atoms{"{", "}", "[", "]", "\"",   ":",    ",",  " ", "\n",   "a",    "b", "1",
                                       "0", "-", ".", "e", "true", "null", "\\", "é", "\xC3", "\xA9", "x"};
  std::mt19937_64 rng(seed);
  std::vector<std::string> v{""};
  for (const auto& a : atoms) v.push_back(a);
  for (int i = 0; i < 400; ++i) {
    std::string t;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < len; ++k) t += atoms[rng() % atoms.size()];
    v.push_back(t);
  }
  v.push_back("{\"");
  v.push_back("{\"");  // duplicate bytes under two ids
  return v;
}

TEST(GrammarMask, TrieWalkEqualsBruteForce) {
  const auto bytes = random_vocabulary(7);
  const TokenVocabulary vocab(bytes);
  auto g = compile_json_schema_text(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}},
      "b":{"enum":["x","é"]}},"additionalProperties":{"type":"boolean"}})");
  std::mt19937_64 rng(3);
  for (int walk = 0; walk < 20; ++walk) {
    int32_t state = g->start_state();
    for (int step = 0; step < 30; ++step) {
      const auto mask = g->token_mask(state, vocab);
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < bytes.size(); ++id) {
        const bool ok = !bytes[id].empty() && g->advance(state, bytes[id]) != CompiledGrammar::kDead;
        ASSERT_EQ(bit(*mask, id), ok) << "token " << id << " '" << bytes[id] << "' walk " << walk << " step " << step;
        if (ok) allowed.push_back(static_cast<int32_t>(id));
      }
      if (allowed.empty()) break;
      state = g->advance(state, bytes[static_cast<size_t>(allowed[rng() % allowed.size()])]);
    }
  }
}

TEST(GrammarMask, StopTokensOnlyWhenComplete) {
  const std::vector<std::string> bytes{"", "[", "]", "1", ",", "[]", " "};
  auto vocab = std::make_shared<const TokenVocabulary>(bytes);
  auto g = compile_json_schema_text(R"({"type":"array","items":{"type":"integer"},"maxItems":1})");
  GrammarMatcher m(g, vocab, {0});
  std::vector<uint64_t> mask;
  ASSERT_TRUE(m.fill_next_token_mask(mask));
  EXPECT_FALSE(bit(mask, 0));
  EXPECT_TRUE(bit(mask, 1));
  EXPECT_TRUE(bit(mask, 5));
  EXPECT_FALSE(m.accept_token(0));  // eos before the array is complete
  EXPECT_FALSE(m.accept_token(2));
  ASSERT_TRUE(m.accept_token(5));
  EXPECT_TRUE(m.is_complete());
  ASSERT_TRUE(m.fill_next_token_mask(mask));
  EXPECT_EQ(mask[0], uint64_t{1});  // only eos: nothing may follow a complete array
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.stopped());

  GrammarMatcher no_stop(g, vocab, {});
  ASSERT_TRUE(no_stop.accept_token(5));
  EXPECT_FALSE(no_stop.fill_next_token_mask(mask));  // complete and no way to say so: caller finishes
}

TEST(GrammarMask, SamplerMaskSetsExactlyTheClearIdsToMinusInfinity) {
  std::mt19937_64 rng(5);
  for (size_t n : {1u, 63u, 64u, 65u, 200u, 1000u}) {
    std::vector<uint64_t> mask((n + 63) / 64 - (n > 64 ? 1 : 0));  // shorter than the row when n > 64
    for (auto& w : mask) w = rng() % 3 == 0 ? 0 : rng() % 3 == 0 ? ~uint64_t{0} : rng();
    std::vector<float> row(n, 1.0f);
    apply_token_mask(row, mask);
    for (size_t i = 0; i < n; ++i) {
      const bool allowed = i / 64 < mask.size() && ((mask[i / 64] >> (i % 64)) & 1u);
      ASSERT_EQ(row[i], allowed ? 1.0f : -std::numeric_limits<float>::infinity()) << "n " << n << " id " << i;
    }
  }
}

TEST(GrammarMask, LeftRecursionIsReported) {
  Grammar g;
  const int32_t a = g.add_rule("a");
  g.add_alternative(a, {a, g.terminal(byte_set('x'))});
  g.add_alternative(a, g.literal("y"));
  g.set_root(a);
  EXPECT_THROW(CompiledGrammar{std::move(g)}, InvalidArgumentError);
}

}  // namespace
}  // namespace opchain
