// Note [Impl builders]: nn modules ask the backend for their impls, so a vendor can supply its own
// impl for an OpType (here a fused attention) without touching nn; a builder that makes the wrong
// interface is an error at build naming the op; the defaults cover every op.
#include <gtest/gtest.h>

#include "backends/op_impl.h"
#include "backends/ops_backend.h"
#include "nn/attention.h"
#include "nn/silu_and_mul.h"
#include "vendors/builtin_vendors.h"

namespace opchain {
namespace {

// A vendor's attention: one kernel that would fill the cache and attend at once; here it records its
// calls and writes a marker, so the test sees that nn::Attention ran it.
struct FusedAttention final : AttentionImpl {
  static inline int calls = 0;
  FusedAttention(const OpsBackend&, const ImplBuildParams& p) {
    site_ = TraceSite{p.module_path, p.nn_module, "VendorFusedAttention"};
  }
  void forward(const StepContext&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor& out, float scale) const override {
    ++calls;
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = scale;
  }
};

DeviceContext cpu_device(const ImplBuilderTable* impls = nullptr) {
  DeviceContext dev;
  dev.vendor = "cpu";
  dev.registry = &builtin_registry();
  dev.impls = impls;
  return dev;
}

TEST(ImplBuilders, DefaultsCoverEveryOp) {
  for (const auto& info : kOpTable) EXPECT_TRUE(static_cast<bool>(default_impl_builders().get(info.type))) << info.key;
  const DeviceContext dev = cpu_device();
  const OpsBackend& backend = select_backend(dev);
  auto impl = build_impl<OpType::RmsNorm>(backend, ImplBuildParams{DType::F32, "model.norm", "RMSNorm"});
  EXPECT_EQ(impl->site().impl, "DefaultRmsNormImpl");
  auto attn = build_impl<OpType::PagedDecodeAttention>(
      backend, ImplBuildParams{DType::F32, "model.layers.0.self_attn", "Attention"});
  EXPECT_EQ(attn->site().impl, "DefaultAttentionImpl");
}

TEST(ImplBuilders, AVendorImplRunsUnderAnUnchangedNnModule) {
  ImplBuilderTable impls;
  impls.set(OpType::PagedDecodeAttention,
            [](const OpsBackend& b, const ImplBuildParams& p) -> std::unique_ptr<OpImplBase> {
              return std::make_unique<FusedAttention>(b, p);
            });
  const DeviceContext dev = cpu_device(&impls);
  const nn::ModuleContext mc{&dev, "model.layers.0.self_attn"};
  const nn::Attention attention(mc, 2, 1, 4, 0.5f);
  // Other ops keep their default impls on the same backend.
  EXPECT_NO_THROW(nn::SiluAndMul{mc});

  Workspace ws;
  StepContext ctx;
  ctx.workspace = &ws;
  const Tensor q = Tensor::empty(DType::F32, {1, 8}), kv = Tensor::empty(DType::F32, {1, 4});
  const Tensor cache = Tensor::empty(DType::F32, {2, 4, 1, 4});
  FusedAttention::calls = 0;
  const Tensor out = attention.forward(ctx, q, kv, kv, cache, cache);
  EXPECT_EQ(FusedAttention::calls, 1);
  ASSERT_EQ(out.numel(), 8);
  EXPECT_EQ(out.data<float>()[7], 0.5f);
}

TEST(ImplBuilders, ABuilderOfTheWrongInterfaceFailsAtBuildNamingTheOp) {
  ImplBuilderTable impls;
  impls.set(OpType::FusedMoe, [](const OpsBackend& b, const ImplBuildParams& p) -> std::unique_ptr<OpImplBase> {
    return std::make_unique<FusedAttention>(b, p);
  });
  const DeviceContext dev = cpu_device(&impls);
  try {
    build_impl<OpType::FusedMoe>(select_backend(dev),
                                 ImplBuildParams{DType::F32, "model.layers.0.mlp.experts", "FusedMoE"});
    FAIL();
  } catch (const UnsupportedOpError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("FusedMoe impl for model.layers.0.mlp.experts"), std::string::npos) << msg;
  }
}

TEST(ImplBuilders, ADeviceContextWithoutARegistryIsAnError) {
  DeviceContext dev;
  EXPECT_THROW(select_backend(dev), InvalidArgumentError);
}

}  // namespace
}  // namespace opchain
