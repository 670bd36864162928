// Every golden model, on every vendor: prefill logits over ids.txt / ids_long.txt match the
// independent PyTorch reference within 1e-3, and prefill of a prefix + KV-cache decode of the rest
// reproduces the same logits step by step (for the hybrid models, with the linear-attention state
// carried in a state slot). The hybrid models' references are float64 forwards stored as f32.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "io/npy.h"
#include "test_paths.h"

namespace opchain {
namespace {

using test::max_abs_diff;
using test::read_ids;

struct Case {
  std::string model, vendor;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model + "_" + info.param.vendor;
  for (auto& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class GoldenModel : public testing::TestWithParam<Case> {};

void check_prefill(const Case& c, const std::string& ids_file, const std::string& ref_file) {
  const std::string dir = test::model_dir(c.model);
  const auto ids = read_ids(dir + "/" + ids_file);
  ASSERT_FALSE(ids.empty());
  const NpyArray ref = read_npy_f32(dir + "/" + ref_file);
  LoadedModel m = load_model(dir, c.vendor);
  const int64_t n = static_cast<int64_t>(ids.size());
  KvCache cache(m.config, 1 + (n + 15) / 16, 16);
  std::vector<int32_t> blocks;
  ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
  ModelRunner runner(*m.model, m.device, cache);
  SequenceStep step{ids, 0, blocks, true, cache.state_slots().allocate()};
  Tensor logits = runner.forward({&step, 1});
  ASSERT_EQ(logits.size(0), ref.shape[0]);
  ASSERT_EQ(logits.size(1), ref.shape[1]);
  EXPECT_LE(max_abs_diff(logits.data<float>(), ref.data.data(), logits.numel()), 1e-3f) << ids_file;
}

TEST_P(GoldenModel, PrefillMatchesReference) { check_prefill(GetParam(), "ids.txt", "ref_logits.npy"); }

// The 160-token prompts cross KV block boundaries; trained-qwen3-moe ships no long reference.
class GoldenLongModel : public GoldenModel {};
TEST_P(GoldenLongModel, LongPrefillMatchesReference) {
  check_prefill(GetParam(), "ids_long.txt", "ref_logits_long.npy");
}

// Prefill the first part, then decode one token at a time (and a multi-token chunk over a cached
// prefix), crossing KV block boundaries: every step's logits equal the reference row.
TEST_P(GoldenModel, PrefixThenDecodeMatchesReference) {
  const Case& c = GetParam();
  const std::string dir = test::model_dir(c.model);
  const bool has_long = c.model != "trained-qwen3-moe";
  const auto ids = read_ids(dir + (has_long ? "/ids_long.txt" : "/ids.txt"));
  const NpyArray ref = read_npy_f32(dir + (has_long ? "/ref_logits_long.npy" : "/ref_logits.npy"));
  LoadedModel m = load_model(dir, c.vendor);
  const int64_t n = static_cast<int64_t>(ids.size()), vocab = m.config.vocab_size;
  KvCache cache(m.config, 1 + (n + 7) / 8, 8);  // block 8: many block boundaries
  std::vector<int32_t> blocks;
  ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
  ModelRunner runner(*m.model, m.device, cache);
  const int32_t slot = cache.state_slots().allocate();
  const int64_t prefix = n / 3, chunk_end = std::min<int64_t>(n, prefix + 11);
  SequenceStep first{std::span<const int32_t>(ids.data(), static_cast<size_t>(prefix)), 0, blocks, true, slot};
  Tensor logits = runner.forward({&first, 1});
  EXPECT_LE(max_abs_diff(logits.data<float>(), ref.data.data(), prefix * vocab), 1e-3f);
  // A chunk over a cached prefix exercises paged prefill attention.
  SequenceStep chunk{std::span<const int32_t>(ids.data() + prefix, static_cast<size_t>(chunk_end - prefix)), prefix,
                     blocks, true, slot};
  logits = runner.forward({&chunk, 1});
  EXPECT_LE(max_abs_diff(logits.data<float>(), ref.data.data() + prefix * vocab, (chunk_end - prefix) * vocab), 1e-3f);
  for (int64_t t = chunk_end; t < n; ++t) {
    SequenceStep d{std::span<const int32_t>(ids.data() + t, 1), t, blocks, false, slot};
    logits = runner.forward({&d, 1});
    ASSERT_LE(max_abs_diff(logits.data<float>(), ref.data.data() + t * vocab, vocab), 1e-3f) << "decode position " << t;
  }
}

// Two sequences decoded together give each one's logits (a batch of different lengths).
TEST_P(GoldenModel, BatchedDecodeMatchesReference) {
  const Case& c = GetParam();
  const std::string dir = test::model_dir(c.model);
  const auto ids = read_ids(dir + "/ids.txt");
  const NpyArray ref = read_npy_f32(dir + "/ref_logits.npy");
  LoadedModel m = load_model(dir, c.vendor);
  const int64_t n = static_cast<int64_t>(ids.size()), vocab = m.config.vocab_size;
  KvCache cache(m.config, 1 + 2 * ((n + 3) / 4), 4, /*num_state_slots=*/2);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), a));
  ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), b));
  ModelRunner runner(*m.model, m.device, cache);
  const int64_t pa = 5, pb = 9;
  SequenceStep pre[2] = {{std::span<const int32_t>(ids.data(), pa), 0, a, false, 0},
                         {std::span<const int32_t>(ids.data(), pb), 0, b, false, 1}};
  runner.forward(pre);
  for (int64_t s = 0; pb + s < n; ++s) {
    SequenceStep steps[2] = {{std::span<const int32_t>(ids.data() + pa + s, 1), pa + s, a, false, 0},
                             {std::span<const int32_t>(ids.data() + pb + s, 1), pb + s, b, false, 1}};
    Tensor logits = runner.forward(steps);
    ASSERT_LE(max_abs_diff(logits.data<float>(), ref.data.data() + (pa + s) * vocab, vocab), 1e-3f);
    ASSERT_LE(max_abs_diff(logits.data<float>() + vocab, ref.data.data() + (pb + s) * vocab, vocab), 1e-3f);
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* model : {"tiny-qwen3-moe", "tiny-qwen3-dense", "tiny-llama", "tiny-qwen2-moe", "trained-qwen3-moe",
                            "tiny-qwen3-next", "tiny-qwen3_5-moe", "tiny-qwen3_5-moe-vl", "tiny-qwen3_5"})
    for (const char* vendor : {"reference", "cpu"}) out.push_back({model, vendor});
  return out;
}

std::vector<Case> long_cases() {
  std::vector<Case> out;
  for (const auto& c : all_cases())
    if (c.model != "trained-qwen3-moe") out.push_back(c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllModels, GoldenModel, testing::ValuesIn(all_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ModelsWithLongReference, GoldenLongModel, testing::ValuesIn(long_cases()), case_name);

}  // namespace
}  // namespace opchain
