// Graph mode against eager, the oracle (Note [Graph capture] in backends/graph_runner.h): on the small
// golden models, decode replayed from captured buckets gives the same greedy tokens and the same
// logits (bit-identical when the batch fills its bucket, within 1e-4 when padded) over 32+ steps
// that grow the kv lengths across block boundaries, through ModelRunner and through LLMEngine with
// sequences finishing and joining mid-way. Negative controls show that a host-side value frozen at
// capture would be caught.
#include "engine/decode_graph_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "test_paths.h"
#include "vendors/builtin_vendors.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBlock = 4;  // small blocks: a decode crosses a block boundary every 4 steps

int32_t argmax(const float* row, int64_t n) {
  int32_t best = 0;
  for (int64_t v = 1; v < n; ++v)
    if (row[v] > row[best]) best = static_cast<int32_t>(v);
  return best;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  float m = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    m = std::max(m, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

bool is_bucket(int64_t batch, const std::vector<int64_t>& buckets) {
  return std::find(buckets.begin(), buckets.end(), batch) != buckets.end();
}

// Deterministic prompt ids of varied lengths.
std::vector<int32_t> prompt(int64_t seq, int64_t len, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < len; ++i) ids.push_back(static_cast<int32_t>((seq * 131 + i * 17 + 7) % vocab));
  return ids;
}

class GraphDecode : public testing::TestWithParam<std::string> {};

// One runner eager, one with graphs, each on its own cache; the same steps go to both and eager's
// greedy token feeds both, so a mismatch cannot snowball into unrelated steps.
TEST_P(GraphDecode, MatchesEagerAtEveryBucketAndBetweenBuckets) {
  LoadedModel m = load_model(test::model_dir(GetParam()), "cpu");
  const int64_t vocab = m.config.vocab_size, steps = 33, max_batch = 16;
  const int64_t per_seq = 1 + (10 + steps + kBlock - 1) / kBlock;
  KvCache eager_cache(m.config, 1 + max_batch * per_seq, kBlock, max_batch),
      graph_cache(m.config, 1 + max_batch * per_seq, kBlock, max_batch);
  ModelRunner eager(*m.model, m.device, eager_cache), graph(*m.model, m.device, graph_cache);
  ASSERT_TRUE(graph.enable_graph_mode(max_batch)) << graph.graph_off_reason();
  const std::vector<int64_t> buckets = graph.graphs()->buckets();
  EXPECT_EQ(buckets, (std::vector<int64_t>{1, 2, 4, 8, 16}));

  // Every bucket and sizes between them; the 4-layer trained model (10x the work per row) runs a
  // subset that still pads and fills buckets, so the suite stays fast under sanitizers.
  const std::vector<int64_t> batches = GetParam() == "trained-qwen3-moe"
                                           ? std::vector<int64_t>{1, 3, 8}
                                           : std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 11, 16};
  for (int64_t batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<std::vector<int32_t>> tokens, eager_blocks(static_cast<size_t>(batch)),
        graph_blocks(static_cast<size_t>(batch));
    std::vector<SequenceStep> prefill;
    for (int64_t s = 0; s < batch; ++s) {
      tokens.push_back(prompt(s, 2 + (s * 3) % 9, vocab));  // 2..10 tokens: the rows sit at different depths
      const int64_t need = eager_cache.blocks_for(static_cast<int64_t>(tokens.back().size()) + steps);
      ASSERT_TRUE(eager_cache.allocator().allocate(need, eager_blocks[static_cast<size_t>(s)]));
      ASSERT_TRUE(graph_cache.allocator().allocate(need, graph_blocks[static_cast<size_t>(s)]));
    }
    auto step_of = [&](const std::vector<std::vector<int32_t>>& blocks, bool whole) {
      std::vector<SequenceStep> out;
      for (int64_t s = 0; s < batch; ++s) {
        const auto& t = tokens[static_cast<size_t>(s)];
        const size_t first = whole ? 0 : t.size() - 1;
        out.push_back({std::span<const int32_t>(t.data() + first, t.size() - first), static_cast<int64_t>(first),
                       blocks[static_cast<size_t>(s)], false, static_cast<int32_t>(s)});
      }
      return out;
    };
    // Prefill: eager on both runners (a graph replays decode steps only).
    Tensor e = eager.forward(step_of(eager_blocks, true));
    Tensor g = graph.forward(step_of(graph_blocks, true));
    EXPECT_FALSE(graph.last_step_replayed());
    ASSERT_TRUE(bit_identical(e, g));
    for (int64_t s = 0; s < batch; ++s)
      tokens[static_cast<size_t>(s)].push_back(argmax(e.data<float>() + s * vocab, vocab));

    for (int64_t step = 0; step < steps; ++step) {
      SCOPED_TRACE("decode step " + std::to_string(step));
      e = eager.forward(step_of(eager_blocks, false));
      g = graph.forward(step_of(graph_blocks, false));
      ASSERT_TRUE(graph.last_step_replayed());
      ASSERT_FALSE(eager.last_step_replayed());
      ASSERT_EQ(g.size(0), batch);
      if (is_bucket(batch, buckets))
        ASSERT_TRUE(bit_identical(e, g)) << "max |diff| " << max_abs_diff(e, g);
      else
        ASSERT_LE(max_abs_diff(e, g), 1e-4f);
      for (int64_t s = 0; s < batch; ++s) {
        const int32_t next = argmax(e.data<float>() + s * vocab, vocab);
        ASSERT_EQ(argmax(g.data<float>() + s * vocab, vocab), next) << "sequence " << s;
        tokens[static_cast<size_t>(s)].push_back(next);
      }
    }
    for (const auto& b : eager_blocks) eager_cache.allocator().free(b);
    for (const auto& b : graph_blocks) graph_cache.allocator().free(b);
  }
  EXPECT_EQ(graph.graph_replays(), static_cast<int64_t>(batches.size()) * steps);
}

// Requests of different lengths finish at different steps while new ones join (a step with a
// prefill chunk runs eager, the pure decode steps around it replay): graph and eager engines emit
// the same greedy tokens for every request.
TEST_P(GraphDecode, EngineWithSequencesFinishingAndJoiningMatchesEager) {
  LoadedModel m = load_model(test::model_dir(GetParam()), "cpu");
  auto run = [&](bool graph_mode) {
    EngineConfig ec;
    ec.block_size = kBlock;
    ec.num_blocks = 1 + 12 * 16;
    ec.max_batch = 6;  // 12 requests: some wait for others to finish
    ec.prefill_chunk = 5;
    ec.graph = graph_mode;
    LLMEngine engine(*m.model, m.device, nullptr, ec, {});
    EXPECT_EQ(engine.runner().graph_mode(), graph_mode);
    std::vector<uint64_t> ids;
    auto add = [&](int64_t r) {
      GenerationRequest req;
      req.prompt_ids = prompt(r, 3 + (r * 5) % 8, m.config.vocab_size);
      req.max_new_tokens = 6 + (r * 7) % 29;  // 6..34 tokens: they finish at different steps
      req.ignore_eos = true;
      req.sampling.temperature = 0;
      ids.push_back(engine.add_request(std::move(req)));
    };
    for (int64_t r = 0; r < 4; ++r) add(r);
    int64_t step = 0;
    while (engine.step()) {
      ++step;
      if (step == 3 || step == 11 || step == 20)
        for (int k = 0; k < 3 && ids.size() < 12; ++k) add(static_cast<int64_t>(ids.size()));
      if (step == 20) add(static_cast<int64_t>(ids.size()));  // a 13th joining a nearly full batch
    }
    std::vector<std::vector<int32_t>> out;
    for (uint64_t id : ids) {
      auto o = engine.take_output(id);
      EXPECT_TRUE(o.has_value());
      out.push_back(o ? o->ids : std::vector<int32_t>{});
    }
    return std::make_pair(out, engine.stats());
  };
  const auto [eager_out, eager_stats] = run(false);
  const auto [graph_out, graph_stats] = run(true);
  ASSERT_EQ(eager_out.size(), 13u);
  EXPECT_EQ(eager_stats.graph_steps, 0);
  EXPECT_GT(graph_stats.graph_steps, 20);
  EXPECT_LT(graph_stats.graph_steps, graph_stats.steps);  // steps with a prefill chunk ran eager
  EXPECT_EQ(graph_stats.steps, eager_stats.steps);
  for (size_t r = 0; r < eager_out.size(); ++r) {
    EXPECT_EQ(graph_out[r], eager_out[r]) << "request " << r;
    EXPECT_EQ(static_cast<int64_t>(eager_out[r].size()), 6 + (static_cast<int64_t>(r) * 7) % 29);
  }
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, GraphDecode,
                         testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-llama", "trained-qwen3-moe",
                                         "tiny-qwen3-next", "tiny-qwen3_5-moe", "tiny-qwen3_5"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(DecodeGraphBuckets, PowersOfTwoToSixteenThenStepsOfSixteen) {
  EXPECT_EQ(decode_graph_buckets(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(decode_graph_buckets(3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(decode_graph_buckets(16), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(decode_graph_buckets(20), (std::vector<int64_t>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(decode_graph_buckets(64), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 48, 64}));
  EXPECT_EQ(decode_graph_buckets(72), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 48, 64, 72}));
  EXPECT_THROW(decode_graph_buckets(0), InvalidArgumentError);
}

// One sequence, eager on one cache and replayed on another, at kv lengths 6..17 (crossing three
// block boundaries). Each replay must read that step's lengths, not the ones of the capture or of
// the step before: the logits change from step to step and graph equals eager at every one.
struct FrozenValueFixture {
  LoadedModel m = load_model(test::model_dir("tiny-qwen3-moe"), "cpu");
  static constexpr int64_t kSteps = 12;
  std::vector<int32_t> tokens = prompt(1, 5, 512);

  struct Side {
    KvCache cache;
    ModelRunner runner;
    std::vector<int32_t> blocks;
    explicit Side(const LoadedModel& m) : cache(m.config, 8, kBlock), runner(*m.model, m.device, cache) {
      cache.allocator().allocate(5, blocks);
    }
    SequenceStep step(const std::vector<int32_t>& t, bool whole) const {
      const size_t first = whole ? 0 : t.size() - 1;
      return {std::span<const int32_t>(t.data() + first, t.size() - first), static_cast<int64_t>(first), blocks, false};
    }
  };
};

TEST(GraphReplay, ReadsTheKvLengthsOfEachStep) {
  FrozenValueFixture f;
  FrozenValueFixture::Side eager(f.m), graph(f.m);
  ASSERT_TRUE(graph.runner.enable_graph_mode(1));
  SequenceStep s = eager.step(f.tokens, true);
  Tensor e = eager.runner.forward({&s, 1});
  s = graph.step(f.tokens, true);
  graph.runner.forward({&s, 1});
  f.tokens.push_back(argmax(e.data<float>(), 512));
  std::vector<float> previous;
  for (int64_t i = 0; i < FrozenValueFixture::kSteps; ++i) {
    s = eager.step(f.tokens, false);
    e = eager.runner.forward({&s, 1});
    s = graph.step(f.tokens, false);
    Tensor g = graph.runner.forward({&s, 1});
    ASSERT_TRUE(graph.runner.last_step_replayed());
    ASSERT_TRUE(bit_identical(e, g)) << "kv length " << s.past_len + 1 << ": max |diff| " << max_abs_diff(e, g);
    std::vector<float> now(g.data<float>(), g.data<float>() + g.numel());
    EXPECT_NE(now, previous);
    previous = now;
    f.tokens.push_back(argmax(e.data<float>(), 512));
  }
}

// Negative controls: the same replay with one host-side value deliberately frozen differs from
// eager, so the test above would catch a value captured by copy instead of refreshed in place.
enum class Freeze { KvLength, WholeUpdate };

float replay_with_frozen(Freeze what) {
  FrozenValueFixture f;
  FrozenValueFixture::Side eager(f.m), graph(f.m);
  DecodeGraphRunner graphs(*f.m.model, select_backend(f.m.device), graph.cache, 1);
  SequenceStep s = eager.step(f.tokens, true);
  Tensor e = eager.runner.forward({&s, 1});
  s = graph.step(f.tokens, true);
  graph.runner.forward({&s, 1});  // prefill: eager on the graph side's cache
  f.tokens.push_back(argmax(e.data<float>(), 512));
  DecodeGraphRunner::Bucket& b = graphs.bucket_for(1);
  float diff = 0;
  for (int64_t i = 0; i < FrozenValueFixture::kSteps; ++i) {
    s = eager.step(f.tokens, false);
    e = eager.runner.forward({&s, 1});
    s = graph.step(f.tokens, false);
    const int32_t kv_before = b.ctx.kv_seqlens.data<int32_t>()[0];  // what the previous replay read
    graphs.fill_buffers(b, {&s, 1});
    if (i < FrozenValueFixture::kSteps / 2) {
      graphs.update(b);  // the real thing for the first steps: equal to eager
      Tensor g = graphs.replay(b, 1);
      EXPECT_TRUE(bit_identical(e, g));
    } else {
      if (what == Freeze::KvLength) {
        b.ctx.kv_seqlens.data<int32_t>()[0] = kv_before;
        graphs.update(b);
      }
      diff = std::max(diff, max_abs_diff(e, graphs.replay(b, 1)));
    }
    f.tokens.push_back(argmax(e.data<float>(), 512));
  }
  return diff;
}

TEST(GraphReplay, NegativeControlFrozenKvLengthDiffers) { EXPECT_GT(replay_with_frozen(Freeze::KvLength), 1e-3f); }
TEST(GraphReplay, NegativeControlSkippedUpdateDiffers) { EXPECT_GT(replay_with_frozen(Freeze::WholeUpdate), 1e-3f); }

// Padding rows write nothing: after replays of 3 sequences in bucket 4, the reserved block 0 of
// every layer is still all zeros.
TEST(GraphReplay, PaddingRowsLeaveTheReservedBlockUntouched) {
  LoadedModel m = load_model(test::model_dir("tiny-qwen2-moe"), "cpu");
  KvCache cache(m.config, 16, kBlock);
  ModelRunner runner(*m.model, m.device, cache);
  ASSERT_TRUE(runner.enable_graph_mode(4));
  std::vector<std::vector<int32_t>> tokens, blocks(3);
  for (int64_t s = 0; s < 3; ++s) {
    tokens.push_back(prompt(s, 3, m.config.vocab_size));
    ASSERT_TRUE(cache.allocator().allocate(3, blocks[static_cast<size_t>(s)]));
  }
  for (int step = 0; step < 6; ++step) {
    std::vector<SequenceStep> steps;
    for (int64_t s = 0; s < 3; ++s) {
      const auto& t = tokens[static_cast<size_t>(s)];
      const size_t first = step == 0 ? 0 : t.size() - 1;
      steps.push_back({std::span<const int32_t>(t.data() + first, t.size() - first), static_cast<int64_t>(first),
                       blocks[static_cast<size_t>(s)], false});
    }
    Tensor logits = runner.forward(steps);
    EXPECT_EQ(runner.last_step_replayed(), step > 0);
    for (int64_t s = 0; s < 3; ++s)
      tokens[static_cast<size_t>(s)].push_back(argmax(logits.data<float>() + s * logits.size(1), logits.size(1)));
  }
  for (const auto& layer : cache.layers()) {
    const int64_t block_floats = layer.k.numel() / layer.k.size(0);
    for (int64_t i = 0; i < block_floats; ++i) {
      ASSERT_EQ(layer.k.data<float>()[i], 0.0f);
      ASSERT_EQ(layer.v.data<float>()[i], 0.0f);
    }
  }
}

// A kernel whose entry says capture_safe=false makes capture fail, naming it (here rms_norm, in a
// registry that is the reference vendor under another name).
TEST(GraphCapture, KernelThatIsNotCaptureSafeFailsWithItsName) {
  // Built once: backends are cached per registry for the process, so the registry must outlive it.
  static const Registry reg = [] {
    Registry r;
    for (const auto& info : kOpTable)
      for (const KernelEntry* e : builtin_registry().entries_for(info.type)) {
        if (e->vendor != "reference") continue;
        const bool unsafe = info.type == OpType::RmsNorm;
        r.add_by_key(info.key, "capture-test", e->dtype, e->fn,
                     unsafe ? "test::rms_norm_not_capture_safe" : e->kernel_name, KernelFlags{!unsafe});
      }
    return r;
  }();
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const ModelConfig config = load_model_config(dir);
  WeightStore weights(dir);
  DeviceContext dev;
  dev.vendor = "capture-test";
  dev.registry = &reg;
  auto model = build_model(config, weights, dev);
  KvCache cache(config, 8, kBlock);
  ModelRunner runner(*model, dev, cache);
  try {
    runner.enable_graph_mode(2);
    FAIL() << "capture succeeded with a kernel that is not capture-safe";
  } catch (const GraphCaptureError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("test::rms_norm_not_capture_safe"), std::string::npos) << what;
    EXPECT_NE(what.find("not capture-safe"), std::string::npos) << what;
  }
  EXPECT_FALSE(runner.graph_mode());
  EXPECT_EQ(LaunchRecorder::active(), nullptr);
  // The same model still runs eagerly.
  std::vector<int32_t> blocks, ids{1, 2, 3};
  ASSERT_TRUE(cache.allocator().allocate(1, blocks));
  SequenceStep s{ids, 0, blocks, false};
  EXPECT_EQ(runner.forward({&s, 1}).size(0), 1);
}

// Dynamic NTK rope picks inv_freq on the host from each step's positions: the model refuses capture
// up front and decodes eagerly; forcing a capture is an error that says why.
TEST(GraphCapture, DynamicRopeModelRefusesCaptureAndRunsEager) {
  const fs::path dir = fs::temp_directory_path() / ("opchain-dynamic-rope-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(test::model_dir("tiny-llama"), dir, fs::copy_options::recursive);
  nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  config["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  std::ofstream(dir / "config.json") << config.dump();
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};

  LoadedModel m = load_model(dir.string(), "cpu");
  KvCache cache(m.config, 8, kBlock);
  ModelRunner runner(*m.model, m.device, cache);
  EXPECT_FALSE(runner.enable_graph_mode(4));
  EXPECT_FALSE(runner.graph_mode());
  EXPECT_NE(runner.graph_off_reason().find("dynamic"), std::string::npos) << runner.graph_off_reason();
  EXPECT_THROW(DecodeGraphRunner(*m.model, select_backend(m.device), cache, 4), GraphCaptureError);
  std::vector<int32_t> blocks, ids{5, 6};
  ASSERT_TRUE(cache.allocator().allocate(1, blocks));
  SequenceStep s{ids, 0, blocks, false};
  runner.forward({&s, 1});
  EXPECT_FALSE(runner.last_step_replayed());
}

}  // namespace
}  // namespace opchain
