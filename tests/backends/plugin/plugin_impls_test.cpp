// Plugin impls (vendor ABI 1.1, Note [Plugin impls] in backends/plugin/plugin_impls.h): a plugin's
// oc_impl_def replaces the default impl of its OpType on the plugin's vendor, through the same
// build_impl an nn module calls, and computes what the default impl computes.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/host_graph_runner.h"
#include "backends/op_impl.h"
#include "backends/ops_backend.h"
#include "core/error.h"
#include "vendors/builtin_vendors.h"
#include "vendors/plugin_loader.h"

namespace opchain {
namespace {

std::string plugin(const std::string& name) { return std::string(OPCHAIN_TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }

// Never destroyed: backends are cached by registry address for the process.
const Registry& impl_registry() {
  static const Registry* r = [] {
    auto* reg = new Registry;
    register_builtin_vendors(*reg);
    const LoadedPlugin p = load_vendor_plugin(*reg, plugin("test_plugin_impl"));
    EXPECT_EQ(p.num_impls, 1u);
    EXPECT_EQ(p.num_kernels, 0u);
    return reg;
  }();
  return *r;
}

Tensor i32(std::vector<int32_t> v, Shape shape) {
  Tensor t = Tensor::empty(DType::I32, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
  return t;
}

Tensor filled(Shape shape, int seed) {
  Tensor t = Tensor::empty(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.1f * static_cast<float>((i * 5 + seed) % 13 - 6);
  return t;
}

Tensor zeros(DType dt, Shape shape) {
  Tensor t = Tensor::empty(dt, shape);
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

TEST(PluginImpls, APluginImplReplacesTheDefaultOnItsVendorOnly) {
  DeviceContext dev;
  dev.vendor = "implplug";
  dev.registry = &impl_registry();
  const OpsBackend& backend = select_backend(dev);
  auto attn = build_impl<OpType::PagedDecodeAttention>(
      backend, ImplBuildParams{DType::F32, "model.layers.0.self_attn", "Attention"});
  EXPECT_EQ(attn->site().impl, "implplug::fused_attention");
  // The ops it has no impl for keep the defaults, resolving kernels through its fallback.
  auto norm = build_impl<OpType::RmsNorm>(backend, ImplBuildParams{DType::F32, "model.norm", "RMSNorm"});
  EXPECT_EQ(norm->site().impl, "DefaultRmsNormImpl");
  auto moe =
      build_impl<OpType::FusedMoe>(backend, ImplBuildParams{DType::BF16, "model.layers.0.mlp.experts", "FusedMoE"});
  EXPECT_EQ(moe->site().impl, "DefaultFusedMoeImpl");
  // cpu in the same registry is untouched.
  DeviceContext cpu = dev;
  cpu.vendor = "cpu";
  EXPECT_EQ(build_impl<OpType::PagedDecodeAttention>(select_backend(cpu), ImplBuildParams{DType::F32, "a", "Attention"})
                ->site()
                .impl,
            "DefaultAttentionImpl");
}

// A prefill of 3 tokens, then a decode step, through the plugin's fused attention and through cpu's
// default impl, each on its own bf16 cache: same outputs, same caches.
TEST(PluginImpls, FusedAttentionImplMatchesTheDefaultImpl) {
  void* h = dlopen(plugin("test_plugin_impl").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto runs = reinterpret_cast<int (*)()>(dlsym(h, "test_plugin_impl_runs"));
  auto live = reinterpret_cast<int (*)()>(dlsym(h, "test_plugin_impl_live"));
  ASSERT_TRUE(runs && live);
  const int live_before = live();
  {
    DeviceContext pdev, cdev;
    pdev.vendor = "implplug";
    cdev.vendor = "cpu";
    pdev.registry = cdev.registry = &impl_registry();
    const OpsBackend& pb = select_backend(pdev);
    const OpsBackend& cb = select_backend(cdev);
    const ImplBuildParams params{DType::F32, "model.layers.0.self_attn", "Attention"};
    auto pimpl = build_impl<OpType::PagedDecodeAttention>(pb, params);
    auto cimpl = build_impl<OpType::PagedDecodeAttention>(cb, params);
    EXPECT_EQ(live(), live_before + 1);
    const int64_t hq = 4, hk = 2, d = 8, bs = 4, blocks = 3;
    Tensor pk = zeros(DType::BF16, {blocks, bs, hk, d}), pv = zeros(DType::BF16, {blocks, bs, hk, d});
    Tensor ck = zeros(DType::BF16, {blocks, bs, hk, d}), cv = zeros(DType::BF16, {blocks, bs, hk, d});
    const int runs_before = runs();
    for (int step = 0; step < 2; ++step) {
      const int64_t n = step == 0 ? 3 : 1;
      StepContext pctx, cctx;
      for (StepContext* ctx : {&pctx, &cctx}) {
        ctx->input_ids = i32(std::vector<int32_t>(static_cast<size_t>(n), 1), {n});
        ctx->positions = step == 0 ? i32({0, 1, 2}, {3}) : i32({3}, {1});
        ctx->q_seqlens = i32({static_cast<int32_t>(n)}, {1});
        ctx->kv_seqlens = i32({step == 0 ? 3 : 4}, {1});
        ctx->block_tables = i32({2, 1}, {1, 2});
        ctx->block_size = bs;
      }
      pb.update_step_context(pctx);
      cb.update_step_context(cctx);
      const Tensor q = filled({n, hq, d}, step), k = filled({n, hk, d}, step + 3), v = filled({n, hk, d}, step + 7);
      Tensor pout = zeros(DType::F32, {n, hq, d}), cout = zeros(DType::F32, {n, hq, d});
      pimpl->forward(pctx, q, k, v, pk, pv, pout, 0.35f);
      cimpl->forward(cctx, q, k, v, ck, cv, cout, 0.35f);
      // The plugin computes reference's numerics, cpu its own summation order: the op table's tolerance.
      for (int64_t i = 0; i < pout.numel(); ++i)
        EXPECT_NEAR(pout.data<float>()[i], cout.data<float>()[i], 1e-4 * (1.0 + std::fabs(cout.data<float>()[i])))
            << step << " " << i;
      EXPECT_EQ(std::memcmp(pk.raw(), ck.raw(), pk.nbytes()), 0) << step;
      EXPECT_EQ(std::memcmp(pv.raw(), cv.raw(), pv.nbytes()), 0) << step;

      // Note [Plugin impls]: a graph cannot replay it, so capture refuses it by name.
      if (step == 1) {
        HostGraphRunner runner;
        try {
          runner.capture([&] { pimpl->forward(pctx, q, k, v, pk, pv, pout, 0.35f); });
          ADD_FAILURE() << "captured a plugin impl";
        } catch (const GraphCaptureError& e) {
          EXPECT_NE(
              std::string(e.what()).find("plugin impl 'implplug::fused_attention' (op paged_decode_attention, vendor "
                                         "'implplug') at model.layers.0.self_attn runs eagerly only"),
              std::string::npos)
              << e.what();
        }
      }
    }
    EXPECT_EQ(runs(), runs_before + 2);
  }
  EXPECT_EQ(live(), live_before);  // destroy ran with the impl
  dlclose(h);
}

}  // namespace
}  // namespace opchain
