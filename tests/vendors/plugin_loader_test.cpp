// The vendor plugin loader (vendors/plugin_loader.h, Note [Vendor ABI]): a working plugin's kernels
// run through the registry with its fallback for the rest; each broken plugin of
// tests/vendors/plugins/test_plugin.c is refused with one message naming it, and registers nothing.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>

#include "core/error.h"
#include "opchain/vendor_abi.h"
#include "ops/abi_marshal.h"
#include "ops/op_table.h"
#include "ops/registry.h"
#include "vendors/builtin_vendors.h"
#include "vendors/plugin_loader.h"

namespace opchain {
namespace {

std::string plugin(const std::string& name) { return std::string(OPCHAIN_TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }

Registry fresh_registry() {
  Registry reg;
  register_builtin_vendors(reg);
  return reg;
}

// The message of the VendorPluginError that loading `path` into a fresh registry throws; and that
// nothing of the plugin was registered.
std::string load_error(const std::string& path, const std::string& vendor) {
  Registry reg = fresh_registry();
  const auto before = reg.vendors();
  try {
    load_vendor_plugin(reg, path);
  } catch (const VendorPluginError& e) {
    EXPECT_EQ(reg.vendors(), before) << "a refused plugin left a vendor behind";
    EXPECT_FALSE(reg.has_vendor(vendor));
    return e.what();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

TEST(PluginLoader, LoadsKernelsAndFallsBackPerOp) {
  Registry reg = fresh_registry();
  const LoadedPlugin p = load_vendor_plugin(reg, plugin("test_plugin_good"));
  EXPECT_EQ(p.vendor, "testplug");
  EXPECT_EQ(p.fallback, "cpu");
  EXPECT_EQ(p.num_kernels, 2u);
  ASSERT_TRUE(reg.has_vendor("testplug"));

  const KernelEntry& own = reg.resolve(OpType::RmsNorm, "testplug", DType::F32);
  EXPECT_EQ(own.vendor, "testplug");
  EXPECT_EQ(own.kernel_name, "testplug::rms_norm_f32");  // the default name
  EXPECT_TRUE(own.flags.capture_safe);
  // Not in the plugin: the fallback's kernel, which says so in its entry (traces show cpu).
  EXPECT_EQ(reg.resolve(OpType::SiluAndMul, "testplug", DType::F32).vendor, "cpu");
  EXPECT_EQ(reg.resolve(OpType::RmsNorm, "testplug", DType::BF16).vendor, "cpu");
  // Neither has it: the message names both.
  try {
    reg.resolve(OpType::RmsNorm, "testplug", DType::I32);
    FAIL() << "resolved rms_norm(i32)";
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "on vendor 'testplug' (OpType::RmsNorm, key 'rms_norm'); nor on its fallback 'cpu'; registered:"),
              std::string::npos)
        << e.what();
  }
  // The flag decides graph capture (HostGraphRunner refuses entries without capture_safe).
  EXPECT_FALSE(reg.resolve(OpType::SigmoidGateMul, "testplug", DType::F32).flags.capture_safe);

  // The kernel runs through the thunk and computes rms_norm like the reference.
  Tensor x = Tensor::empty(DType::F32, {3, 8}), w = Tensor::empty(DType::F32, {8});
  for (int i = 0; i < 24; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 8; ++i) w.data<float>()[i] = 0.5f + 0.1f * static_cast<float>(i);
  Tensor got = Tensor::empty(DType::F32, {3, 8}), want = Tensor::empty(DType::F32, {3, 8});
  launch(resolve_kernel<OpType::RmsNorm>(reg, "testplug", DType::F32), RmsNormArgs{x, w, got, 1e-6f});
  launch(resolve_kernel<OpType::RmsNorm>(reg, "reference", DType::F32), RmsNormArgs{x, w, want, 1e-6f});
  for (int i = 0; i < 24; ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f) << i;

  // A second load of the same path is the same plugin, not a duplicate vendor.
  EXPECT_EQ(load_vendor_plugin(reg, plugin("test_plugin_good")).vendor, "testplug");
}

TEST(PluginLoader, StepContextHookRuns) {
  Registry reg = fresh_registry();
  load_vendor_plugin(reg, plugin("test_plugin_good"));
  const VendorInfo* info = reg.vendor_info("testplug");
  ASSERT_NE(info, nullptr);
  ASSERT_TRUE(info->on_step_context);
  void* h = dlopen(plugin("test_plugin_good").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto calls = reinterpret_cast<int (*)()>(dlsym(h, "test_plugin_step_calls"));
  ASSERT_NE(calls, nullptr);
  const int before = calls();
  AttnMetadata m;
  m.batch_size = 2;
  info->on_step_context(m, MoeMetadata{});
  EXPECT_EQ(calls(), before + 1);
  dlclose(h);
}

TEST(PluginLoader, KernelErrorNamesPluginVendorKeyAndDtype) {
  Registry reg = fresh_registry();
  const std::string path = plugin("test_plugin_failing");
  load_vendor_plugin(reg, path);
  Tensor x = Tensor::empty(DType::F32, {1, 4}), w = Tensor::empty(DType::F32, {4}),
         out = Tensor::empty(DType::F32, {1, 4});
  try {
    launch(resolve_kernel<OpType::RmsNorm>(reg, "failplug", DType::F32), RmsNormArgs{x, w, out, 1e-6f});
    FAIL() << "the failing kernel did not throw";
  } catch (const VendorPluginError& e) {
    EXPECT_EQ(std::string(e.what()),
              "vendor plugin " + path +
                  " (vendor 'failplug'): kernel failplug::rms_norm for rms_norm(f32) failed with "
                  "status 1: device lost");
  }
  try {
    reg.vendor_info("failplug")->on_step_context(AttnMetadata{}, MoeMetadata{});
    FAIL() << "the failing hook did not throw";
  } catch (const VendorPluginError& e) {
    EXPECT_EQ(std::string(e.what()),
              "vendor plugin " + path +
                  " (vendor 'failplug'): update_step_context failed with status 1: no room for metadata");
  }
}

TEST(PluginLoader, WrongMajorVersion) {
  const std::string path = plugin("test_plugin_wrong_major");
  EXPECT_EQ(load_error(path, "brokenplug"),
            "vendor plugin " + path + ": built against vendor ABI 2.0, this opchain speaks 1." +
                std::to_string(OPCHAIN_VENDOR_ABI_MINOR) +
                " (major versions must match; rebuild the plugin against this opchain's vendor_abi.h)");
}

TEST(PluginLoader, MissingEntrySymbol) {
  const std::string path = plugin("test_plugin_no_entry");
  const std::string msg = load_error(path, "brokenplug");
  EXPECT_EQ(msg.rfind("vendor plugin " + path + ": no entry symbol 'opchain_vendor_plugin_init' (", 0), 0u) << msg;
  EXPECT_NE(msg.find("undefined symbol: opchain_vendor_plugin_init"), std::string::npos) << msg;  // dlerror()
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(PluginLoader, InitFailure) {
  const std::string path = plugin("test_plugin_init_fails");
  EXPECT_EQ(load_error(path, "brokenplug"),
            "vendor plugin " + path + ": opchain_vendor_plugin_init failed: no device found");
}

TEST(PluginLoader, MissingFile) {
  const std::string path = plugin("no_such_plugin");
  const std::string msg = load_error(path, "");
  EXPECT_EQ(msg.rfind("cannot load vendor plugin " + path + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;  // dlerror()
}

TEST(PluginLoader, DuplicateKernel) {
  const std::string path = plugin("test_plugin_duplicate");
  EXPECT_EQ(load_error(path, "dupplug"), "vendor plugin " + path + ": duplicate kernel rms_norm(f32): kernels 0 and 2");
}

TEST(PluginLoader, UnknownOpKey) {
  const std::string path = plugin("test_plugin_unknown_key");
  const std::string msg = load_error(path, "keyplug");
  EXPECT_EQ(msg.rfind("vendor plugin " + path +
                          ": kernel 0 (rms_nrom): unknown op key 'rms_nrom'; known keys: embedding, linear, rms_norm,",
                      0),
            0u)
      << msg;
}

TEST(PluginLoader, UnknownFallbackVendor) {
  const std::string path = plugin("test_plugin_unknown_fallback");
  EXPECT_EQ(load_error(path, "fbplug"), "vendor plugin " + path +
                                            ": vendor 'fbplug' falls back to 'nosuch', which is not registered "
                                            "(registered: cpu, reference)");
}

// ABI 1.1 marshals every op, but only for a plugin built against 1.1: a 1.0 plugin would read the
// 1.1 kinds as opaque, so it still may not take an op with a required field of one.
TEST(PluginLoader, AOneZeroPluginCannotTakeAnOpThatNeedsOneOne) {
  const std::string path = plugin("test_plugin_opaque_op");
  EXPECT_EQ(load_error(path, "moeplug"),
            "vendor plugin " + path +
                ": kernel 0 (fused_moe): op 'fused_moe' has field 'experts' (expert_weights), "
                "which vendor ABI 1.0 does not marshal; build the plugin against vendor ABI 1.1 or later");
}

// Since 1.1 no op of the table has a field without a C form (a new field type without one would make
// the loader refuse its op's kernels, naming the field).
TEST(PluginLoader, EveryOpMarshals) {
  for (const auto& info : kOpTable) {
    EXPECT_EQ(abi_unmarshallable_field(info.type), nullptr) << info.key;
    for (const AbiField& f : abi_fields(info.type)) {
      EXPECT_NE(f.kind, OC_ARG_OPAQUE) << info.key << "." << f.name;
      EXPECT_STRNE(abi_kind_name(f.kind), "?") << info.key << "." << f.name;
    }
  }
  EXPECT_EQ(abi_fields(OpType::PagedDecodeAttention)[4].kind, OC_ARG_ATTN_META);
  EXPECT_EQ(abi_fields(OpType::FusedMoe)[1].kind, OC_ARG_EXPERT_WEIGHTS);
  EXPECT_EQ(abi_fields(OpType::FusedMoe)[5].kind, OC_ARG_MOE_META);
  EXPECT_EQ(abi_fields(OpType::GroupedMatmul)[2].kind, OC_ARG_TENSOR_LIST);
  EXPECT_EQ(abi_fields(OpType::GroupedMatmul)[3].kind, OC_ARG_QUANT_LIST);
  EXPECT_EQ(abi_fields(OpType::CausalConv1d)[3].kind, OC_ARG_ATTN_META);
}

TEST(PluginLoader, OneOneLoadsTheOpsOneZeroRefused) {
  Registry reg = fresh_registry();
  const LoadedPlugin p = load_vendor_plugin(reg, plugin("test_plugin_abi11"));
  EXPECT_EQ(p.vendor, "abi11");
  EXPECT_EQ(p.num_kernels, 9u);
  EXPECT_EQ(reg.resolve(OpType::PagedDecodeAttention, "abi11", DType::BF16).vendor, "abi11");
  EXPECT_EQ(reg.resolve(OpType::FusedMoe, "abi11", DType::BF16).vendor, "abi11");
  EXPECT_EQ(reg.resolve(OpType::GroupedMatmul, "abi11", DType::F32).vendor, "abi11");
  EXPECT_EQ(reg.resolve(OpType::RmsNorm, "abi11", DType::BF16).vendor, "cpu");

  // The hook sees the 1.1 metadata beside the 1.0 members, agreeing with them (the plugin checks).
  void* h = dlopen(plugin("test_plugin_abi11").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto calls = reinterpret_cast<int (*)()>(dlsym(h, "test_plugin_step_calls"));
  ASSERT_NE(calls, nullptr);
  const int before = calls();
  AttnMetadata m;
  m.batch_size = 3;
  MoeMetadata moe;
  moe.pad_size = 2;
  reg.vendor_info("abi11")->on_step_context(m, moe);
  EXPECT_EQ(calls(), before + 1);
  dlclose(h);

  // fused_moe through the thunk: the oc_expert_weights and oc_moe_metadata it reads, checked against
  // reference (the kernel harness covers the shapes; this covers the masked padding row).
  const int64_t n = 3, hid = 8, inter = 4, experts = 3, k = 2;
  auto filled = [&](DType t, Shape shape, float scale) {
    Tensor x = Tensor::empty(t, shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = scale * static_cast<float>((i * 7) % 11 - 5);
    return x;
  };
  ExpertWeights w;
  for (int64_t e = 0; e < experts; ++e) {
    w.gate.push_back(filled(DType::F32, {inter, hid}, 0.05f));
    w.up.push_back(filled(DType::F32, {inter, hid}, 0.03f));
    w.down.push_back(filled(DType::F32, {hid, inter}, 0.04f));
  }
  const Tensor x = filled(DType::F32, {n, hid}, 0.1f), tw = filled(DType::F32, {n, k}, 0.2f);
  Tensor ids = Tensor::empty(DType::I32, {n, k});
  for (int64_t i = 0; i < n * k; ++i) ids.data<int32_t>()[i] = static_cast<int32_t>(i % experts);
  Tensor mask = Tensor::empty(DType::U8, {n});
  mask.data<uint8_t>()[0] = 1, mask.data<uint8_t>()[1] = 1, mask.data<uint8_t>()[2] = 0;
  MoeMetadata mm;
  mm.num_tokens = 2;
  mm.pad_size = 1;
  mm.x_active_mask = mask;
  Tensor got = Tensor::empty(DType::F32, {n, hid}), want = Tensor::empty(DType::F32, {n, hid});
  for (int64_t i = 0; i < n * hid; ++i) got.data<float>()[i] = 99.0f;
  launch(resolve_kernel<OpType::FusedMoe>(reg, "abi11", DType::F32), FusedMoeArgs{x, &w, tw, ids, got, &mm});
  launch(resolve_kernel<OpType::FusedMoe>(reg, "reference", DType::F32), FusedMoeArgs{x, &w, tw, ids, want, &mm});
  for (int64_t i = 0; i < n * hid; ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f) << i;
  EXPECT_EQ(got.data<float>()[2 * hid], 0.0f);  // the padding row
}

// Note [Plugin memory]: every tensor crosses into the plugin's memory and back, and nothing leaks.
TEST(PluginLoader, MemoryHooksStageEveryTensor) {
  Registry reg = fresh_registry();
  const LoadedPlugin p = load_vendor_plugin(reg, plugin("test_plugin_fakedev"));
  EXPECT_TRUE(p.has_memory);
  void* h = dlopen(plugin("test_plugin_fakedev").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto live = reinterpret_cast<int (*)()>(dlsym(h, "test_plugin_live_allocs"));
  ASSERT_NE(live, nullptr);
  Tensor x = Tensor::empty(DType::F32, {3, 8}), w = Tensor::empty(DType::F32, {8});
  for (int i = 0; i < 24; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 8; ++i) w.data<float>()[i] = 0.5f + 0.1f * static_cast<float>(i);
  Tensor got = Tensor::empty(DType::F32, {3, 8}), want = Tensor::empty(DType::F32, {3, 8});
  launch(resolve_kernel<OpType::RmsNorm>(reg, "fakedev", DType::F32), RmsNormArgs{x, w, got, 1e-6f});
  launch(resolve_kernel<OpType::RmsNorm>(reg, "reference", DType::F32), RmsNormArgs{x, w, want, 1e-6f});
  for (int i = 0; i < 24; ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5f) << i;
  EXPECT_EQ(live(), 0);
  dlclose(h);
}

TEST(PluginLoader, IncompleteMemoryHooksAreRefused) {
  const std::string path = plugin("test_plugin_bad_memory");
  EXPECT_EQ(load_error(path, "badmem"), "vendor plugin " + path +
                                            ": vendor 'badmem' declares memory hooks without 'copy_to_host' (alloc, "
                                            "free, copy_to_device and copy_to_host are all required once memory is "
                                            "declared)");
}

TEST(PluginLoader, ImplWithoutRunIsRefused) {
  const std::string path = plugin("test_plugin_bad_impl");
  EXPECT_EQ(load_error(path, "badimpl"), "vendor plugin " + path + ": impl 0 (fused_moe): null run function");
}

TEST(PluginLoader, VendorNameTaken) {
  // A library whose vendor name is taken in the registry it loads into.
  Registry reg2;
  reg2.add_by_key("rms_norm", "example", DType::F32, builtin_registry().find(OpType::RmsNorm, "cpu", DType::F32)->fn,
                  "x");
  register_builtin_vendors(reg2);
  const std::string path = plugin("example");
  try {
    load_vendor_plugin(reg2, path);
    FAIL() << "loaded a second 'example'";
  } catch (const VendorPluginError& e) {
    EXPECT_EQ(std::string(e.what()), "vendor plugin " + path +
                                         ": vendor 'example' is already registered (registered: cpu, "
                                         "example, reference)");
  }
}

TEST(PluginLoader, FromEnvironment) {
  Registry reg = fresh_registry();
  const std::string env = plugin("test_plugin_good") + "::" + plugin("example");
  ::setenv("OPCHAIN_VENDOR_PLUGINS", env.c_str(), 1);
  const auto loaded = load_vendor_plugins(reg, {});
  ::unsetenv("OPCHAIN_VENDOR_PLUGINS");
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_TRUE(reg.has_vendor("testplug"));
  EXPECT_TRUE(reg.has_vendor("example"));
}

TEST(PluginLoader, FieldTableMatchesTheSchemas) {
  // The per-op field order plugins are written against (Note [Vendor ABI]).
  const auto& lin = abi_fields(OpType::Linear);
  ASSERT_EQ(lin.size(), 6u);
  EXPECT_EQ(lin[0].name, "x");
  EXPECT_EQ(lin[2].name, "bias");
  EXPECT_TRUE(lin[2].optional);
  EXPECT_EQ(lin[3].kind, OC_ARG_QUANT);
  EXPECT_TRUE(lin[3].optional);
  EXPECT_EQ(lin[4].kind, OC_ARG_ENUM);
  EXPECT_STREQ(lin[4].enum_values, "f32|bf16|quantized|int8");
  EXPECT_EQ(lin[5].role, Role::Out);
  EXPECT_EQ(abi_unmarshallable_field(OpType::Linear), nullptr);
  EXPECT_EQ(abi_unmarshallable_field(OpType::PagedDecodeAttention), nullptr);
}

// ABI 1.2 appended input_order to oc_quant_params: a 1.1 plugin steps through an array of them with its
// shorter struct, so the host lays each array out at the plugin's stride; a weight whose columns were
// sorted by group reaches a 1.2 plugin with its order and is refused to an older one with a message.
TEST(PluginLoader, QuantParamsReachEachMinorAtItsStride) {
  std::vector<std::shared_ptr<const QuantParams>> qs;
  for (int64_t i = 0; i < 3; ++i) {
    auto q = std::make_shared<QuantParams>();
    q->scheme = QuantScheme::Int4Group;
    q->in_features = 64 * (i + 1);
    q->group_size = 32;
    q->scales = Tensor::empty(DType::F32, {8, 2 * (i + 1)});
    qs.push_back(q);
  }
  for (uint32_t minor : {1u, 2u}) {
    SCOPED_TRACE("plugin ABI 1." + std::to_string(minor));
    PluginRuntime p;
    p.path = "test";
    p.abi_minor = minor;
    CallMarshal m(p, /*stage=*/false);
    m.add("quant", Role::In, static_cast<const std::vector<std::shared_ptr<const QuantParams>>*>(&qs));
    const oc_quant_list* list = m.args()[0].value.quants;
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(list->count, 3u);
    const size_t stride = minor >= 2 ? sizeof(oc_quant_params) : offsetof(oc_quant_params, input_order);
    for (size_t i = 0; i < 3; ++i) {
      const auto* e =
          reinterpret_cast<const oc_quant_params*>(reinterpret_cast<const char*>(list->params) + i * stride);
      EXPECT_EQ(e->in_features, qs[i]->in_features);
      EXPECT_EQ(e->group_size, 32);
      EXPECT_EQ(e->scales.shape[1], qs[i]->scales.size(1));
      EXPECT_EQ(e->group_of.data, nullptr);
      if (minor >= 2) EXPECT_EQ(e->input_order.data, nullptr);
    }
  }
  auto sorted = std::make_shared<QuantParams>(*qs[0]);
  sorted->input_order = Tensor::empty(DType::I32, {64});
  PluginRuntime p;
  p.path = "old.so";
  p.abi_minor = 1;
  try {
    CallMarshal m(p, false);
    m.add("quant", Role::In, static_cast<const QuantParams*>(sorted.get()));
    ADD_FAILURE() << "a 1.1 plugin was handed a sorted weight";
  } catch (const VendorPluginError& e) {
    EXPECT_NE(std::string(e.what()).find("old.so"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vendor ABI 1.2"), std::string::npos) << e.what();
  }
  p.abi_minor = 2;
  CallMarshal m(p, false);
  m.add("quant", Role::In, static_cast<const QuantParams*>(sorted.get()));
  const oc_quant_params* c = m.args()[0].value.quant;
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->input_order.data, sorted->input_order.raw());
  EXPECT_EQ(c->input_order.shape[0], 64);
}

}  // namespace
}  // namespace opchain
