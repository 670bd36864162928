// The cpu vendor's opt-in bf16 dot mode (Note [bf16 dot mode] in cpu_kernels.h): matmuls with bf16
// weights round activations to bf16 and use vdpbf16ps. Checked against reference with a bf16-sized
// bound, for batch invariance and thread-count determinism bit for bit, and on the golden models
// against ref_logits_bf16.npy (the logits of a bf16-activation run) with the same argmax everywhere.
#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "io/npy.h"
#include "test_paths.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

// Turns the mode on for one test and restores the previous state and pool size.
struct Bf16DotOn {
  bool was = cpu::bf16_dot_active();
  bool ok = cpu::set_bf16_dot(true);
  ~Bf16DotOn() {
    cpu::set_bf16_dot(was);
    ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
};

const Registry& reg() { return builtin_registry(); }

template <OpType Op>
Kernel<Op> kernel(const char* vendor, DType t) {
  return resolve_kernel<Op>(reg(), vendor, t);
}

float max_rel_diff(const Tensor& a, const Tensor& b) {
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::fabs(x - y) / (1.0f + std::fabs(y)));
  }
  return worst;
}

TEST(CpuBf16Dot, OffByDefaultAndUnsupportedStaysOff) {
  if (std::getenv("OPCHAIN_CPU_BF16_DOT") == nullptr) {
    EXPECT_FALSE(cpu::bf16_dot_active());
  }
  if (!cpu::bf16_dot_supported()) {
    EXPECT_FALSE(cpu::set_bf16_dot(true));
  }
}

TEST(CpuBf16Dot, LinearNearReferenceBatchInvariantAndDeterministic) {
  Bf16DotOn on;
  if (!on.ok) GTEST_SKIP() << "no avx512_bf16";
  std::mt19937 g(3);
  // K: partial vector (257), exact multiple (512), long (2048); rows cross the 8-row register block.
  for (int64_t in : {257, 512, 2048}) {
    const int64_t rows = 37, out_f = 200;
    Tensor x = rand_f32(g, {rows, in});
    Tensor w = rand_tensor(g, DType::BF16, {out_f, in}, -0.1f, 0.1f), b = rand_tensor(g, DType::BF16, {out_f});
    Tensor ref = Tensor::empty(DType::F32, {rows, out_f}), full = Tensor::empty(DType::F32, {rows, out_f});
    kernel<OpType::Linear>("reference", DType::BF16).fn(LinearArgs{x, w, b, ref});
    const auto k = kernel<OpType::Linear>(kCpuVendor, DType::BF16);
    k.fn(LinearArgs{x, w, b, full});
    const float err = max_rel_diff(full, ref);
    EXPECT_LE(err, 2e-2f) << "k=" << in;
    EXPECT_GT(err, 0.0f) << "the bf16 path did not run";  // f32-exact results would mean the mode is off
    for (int64_t r : {0, 1, 17, 36}) {
      Tensor one = Tensor::empty(DType::F32, {1, out_f});
      k.fn(LinearArgs{x.slice_rows(r, r + 1), w, b, one});
      EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
    }
    for (int threads : {1, 3}) {
      ThreadPool::set_global_threads(threads);
      Tensor again = Tensor::empty(DType::F32, {rows, out_f});
      k.fn(LinearArgs{x, w, b, again});
      EXPECT_EQ(std::memcmp(again.raw(), full.raw(), full.nbytes()), 0) << threads << " threads";
    }
    ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
}

TEST(CpuBf16Dot, FusedMoeNearReferenceAndBatchInvariant) {
  Bf16DotOn on;
  if (!on.ok) GTEST_SKIP() << "no avx512_bf16";
  std::mt19937 g(11);
  const int64_t n = 37;
  Tensor hidden = rand_f32(g, {n, 64}, -2.0f, 2.0f), ids, weights;
  make_routing(g, n, 2, iota_i32(8), ids, weights);
  auto experts = make_experts(g, DType::BF16, 8, 64, 48);
  auto run = [&](const char* vendor, int64_t r0, int64_t r1) {
    Tensor out = Tensor::empty(DType::F32, {r1 - r0, 64});
    MoeMetadata meta;
    meta.num_tokens = r1 - r0;
    kernel<OpType::FusedMoe>(vendor, DType::BF16)
        .fn(FusedMoeArgs{hidden.slice_rows(r0, r1), experts.get(), weights.slice_rows(r0, r1), ids.slice_rows(r0, r1),
                         out, &meta});
    return out;
  };
  const Tensor full = run(kCpuVendor, 0, n), ref = run("reference", 0, n);
  EXPECT_LE(max_rel_diff(full, ref), 3e-2f);
  for (int64_t r : {0, 1, 17, 36}) {
    const Tensor one = run(kCpuVendor, r, r + 1);
    EXPECT_EQ(std::memcmp(one.raw(), full.slice_rows(r, r + 1).raw(), one.nbytes()), 0) << "row " << r;
  }
}

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  std::vector<int32_t> ids;
  std::string tok;
  while (std::getline(in, tok, ',')) ids.push_back(static_cast<int32_t>(std::stol(tok)));
  return ids;
}

// Prefill of ids.txt on the cpu vendor in bf16 dot mode against ref_logits_bf16.npy: within a bf16-sized
// bound and the same argmax at every position.
TEST(CpuBf16Dot, GoldenModelsMatchBf16ReferenceLogits) {
  Bf16DotOn on;
  if (!on.ok) GTEST_SKIP() << "no avx512_bf16";
  for (const char* name : {"tiny-qwen3-moe", "tiny-qwen3-dense", "tiny-llama", "tiny-qwen2-moe"}) {
    SCOPED_TRACE(name);
    const std::string dir = test::model_dir(name);
    const auto ids = read_ids(dir + "/ids.txt");
    ASSERT_FALSE(ids.empty());
    const NpyArray ref = read_npy_f32(dir + "/ref_logits_bf16.npy");
    LoadedModel m = load_model(dir, kCpuVendor);
    const int64_t n = static_cast<int64_t>(ids.size());
    KvCache cache(m.config, 1 + (n + 15) / 16, 16);
    std::vector<int32_t> blocks;
    ASSERT_TRUE(cache.allocator().allocate(cache.blocks_for(n), blocks));
    ModelRunner runner(*m.model, m.device, cache);
    SequenceStep step{ids, 0, blocks, true};
    Tensor logits = runner.forward({&step, 1});
    ASSERT_EQ(logits.size(0), ref.shape[0]);
    ASSERT_EQ(logits.size(1), ref.shape[1]);
    const int64_t vocab = logits.size(1);
    float worst = 0;
    for (int64_t t = 0; t < logits.size(0); ++t) {
      const float* got = logits.data<float>() + t * vocab;
      const float* want = ref.data.data() + t * vocab;
      int64_t a = 0, b = 0;
      for (int64_t v = 0; v < vocab; ++v) {
        worst = std::max(worst, std::fabs(got[v] - want[v]));
        if (got[v] > got[a]) a = v;
        if (want[v] > want[b]) b = v;
      }
      EXPECT_EQ(a, b) << "argmax at position " << t;
    }
    // How far a bf16-activation run is from the f32 one: rounding at other points (transformers rounds
    // every activation, this mode only matmul inputs) moves logits by that much again at most.
    const NpyArray ref32 = read_npy_f32(dir + "/ref_logits.npy");
    float gap = 0;
    for (size_t i = 0; i < ref.data.size(); ++i) gap = std::max(gap, std::fabs(ref.data[i] - ref32.data[i]));
    std::printf("[bf16 dot] %s: max |logit - ref_bf16| = %g; max |ref_f32 - ref_bf16| = %g\n", name, worst, gap);
    EXPECT_LE(worst, 2.0f * gap);
  }
}

}  // namespace
}  // namespace opchain::harness
