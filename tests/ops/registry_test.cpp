// The registry is strict: a missing (op, vendor, dtype) is an error naming what exists, a duplicate
// names both registration sites, a string key must be in the op table, and every op has a reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ops/registry.h"
#include "vendors/builtin_vendors.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain {
namespace {

void noop_rms_norm(const RmsNormArgs&) {}

TEST(Registry, MissingKernelNamesOpKeyDtypeVendorAndWhatExists) {
  Registry reg;
  reg.add<OpType::RmsNorm>("cpu", DType::F32, noop_rms_norm, "test::rms_norm_f32");
  reg.add<OpType::RmsNorm>("cpu", DType::F16, noop_rms_norm, "test::rms_norm_f16");
  try {
    resolve_kernel<OpType::RmsNorm>(reg, "cpu", DType::BF16);
    FAIL();
  } catch (const UnsupportedOpError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no kernel for rms_norm(bf16) on vendor 'cpu'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("OpType::RmsNorm"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu: f32, f16"), std::string::npos) << msg;
  }
}

TEST(Registry, UnknownVendorAndUnregisteredOp) {
  Registry reg;
  reg.add<OpType::RmsNorm>("cpu", DType::F32, noop_rms_norm, "test::rms_norm");
  try {
    reg.resolve(OpType::FusedMoe, "npu", DType::BF16);
    FAIL();
  } catch (const UnsupportedOpError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vendor 'npu' is not registered"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no vendor registers this op"), std::string::npos) << msg;
  }
}

TEST(Registry, DuplicateRegistrationNamesBothSites) {
  Registry reg;
  reg.add<OpType::RmsNorm>("cpu", DType::F32, noop_rms_norm, "first");
  try {
    reg.add<OpType::RmsNorm>("cpu", DType::F32, noop_rms_norm, "second");
    FAIL();
  } catch (const UnsupportedOpError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("duplicate registration of rms_norm(f32)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("first at "), std::string::npos) << msg;
    EXPECT_NE(msg.find("again at "), std::string::npos) << msg;
    EXPECT_NE(msg.find("registry_test.cpp:"), msg.rfind("registry_test.cpp:")) << "both sites named: " << msg;
  }
}

TEST(Registry, StringKeysAreCheckedAgainstTheOpTable) {
  Registry reg;
  EXPECT_THROW(reg.add_by_key("rmsnorm", "plugin", DType::F32, reinterpret_cast<void (*)()>(noop_rms_norm), "p"),
               UnsupportedOpError);
  reg.add_by_key("rms_norm", "plugin", DType::F32, reinterpret_cast<void (*)()>(noop_rms_norm), "plugin::rms_norm");
  EXPECT_NE(reg.find(OpType::RmsNorm, "plugin", DType::F32), nullptr);
}

TEST(OpTable, KeysAreUniqueAndRoundTrip) {
  for (const auto& info : kOpTable) {
    ASSERT_TRUE(op_type_from_key(info.key).has_value()) << info.key;
    EXPECT_EQ(*op_type_from_key(info.key), info.type);
    EXPECT_EQ(op_key(info.type), info.key);
    EXPECT_NE(info.schema.find(std::string(info.key) + "("), std::string_view::npos) << info.schema;
  }
}

TEST(OpTable, EveryOpHasAReferenceKernel) {
  const Registry& reg = builtin_registry();
  for (const auto& info : kOpTable) {
    bool found = false;
    for (const KernelEntry* e : reg.entries_for(info.type)) found = found || e->vendor == kReferenceVendor;
    EXPECT_TRUE(found) << info.key << " has no reference kernel";
  }
}

TEST(OpTable, EveryOpHasAHeaderNamedByItsKey) {
  // One token per op: src/ops/<key>.h holds its Args.
  for (const auto& info : kOpTable) {
    const std::string path = std::string(OPCHAIN_SOURCE_DIR) + "/src/ops/" + std::string(info.key) + ".h";
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
  }
}

}  // namespace
}  // namespace opchain
