// Note [Kernel harness]: every kernel of every non-reference vendor in the built-in registry runs
// against the reference kernel of the same key and dtype, on every shape case of its op (see
// kernel_harness.h), within the op table's tolerance. The parameters come from the registry at test
// registration, so a new vendor is tested without writing a test; a (key, dtype) without a reference
// kernel, an op without a reference kernel, or an op without shape cases fails HarnessCoverage.
#include <gtest/gtest-spi.h>

#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

constexpr const char* kReference = "reference";

struct HarnessParam {
  OpType op;
  std::string vendor;
  DType dtype;
  size_t case_index;
};

void PrintTo(const HarnessParam& p, std::ostream* os) {
  *os << op_key(p.op) << " / " << p.vendor << " / " << dtype_name(p.dtype) << " / "
      << cases_for(p.op)[p.case_index].name;
}

std::vector<HarnessParam> harness_params() {
  std::vector<HarnessParam> params;
  const Registry& reg = harness_registry().reg;
  for (const OpInfo& info : kOpTable) {
    for (const KernelEntry* e : reg.entries_for(info.type)) {
      if (e->vendor == kReference) continue;
      for (size_t c = 0; c < cases_for(info.type).size(); ++c)
        if (cases_for(info.type)[c].applies_to(e->dtype)) params.push_back({info.type, e->vendor, e->dtype, c});
    }
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<HarnessParam>& info) {
  const HarnessParam& p = info.param;
  std::string s = std::string(op_key(p.op)) + "__" + p.vendor + "__" + std::string(dtype_name(p.dtype)) + "__" +
                  cases_for(p.op)[p.case_index].name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class KernelHarness : public ::testing::TestWithParam<HarnessParam> {};

TEST_P(KernelHarness, MatchesReference) {
  const HarnessParam& p = GetParam();
  const Registry& reg = harness_registry().reg;
  const KernelEntry* kernel = reg.find(p.op, p.vendor, p.dtype);
  const KernelEntry* reference = reg.find(p.op, kReference, p.dtype);
  ASSERT_NE(kernel, nullptr);
  ASSERT_NE(reference, nullptr) << op_key(p.op) << "(" << dtype_name(p.dtype) << ") has no reference kernel";
  const Case& c = cases_for(p.op)[p.case_index];
  const std::string what = kernel->kernel_name + " [" + std::string(op_key(p.op)) + ", vendor " + p.vendor + ", " +
                           std::string(dtype_name(p.dtype)) + ", case " + c.name + "]";
  run_case(p.op, c, p.dtype, kernel->fn, reference->fn, what);
}

INSTANTIATE_TEST_SUITE_P(AllVendors, KernelHarness, ::testing::ValuesIn(harness_params()), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KernelHarness);  // a build with the reference vendor only

// The example plugin vendor (and any of OPCHAIN_VENDOR_PLUGINS) is in the harness's registry, so its
// kernels are among the parameters above.
TEST(HarnessCoverage, PluginVendorsLoad) {
  EXPECT_EQ(harness_registry().load_error, "");
  const Registry& reg = harness_registry().reg;
  ASSERT_TRUE(reg.has_vendor("example"));
  for (OpType op : {OpType::RmsNorm, OpType::Linear})
    for (DType t : {DType::F32, DType::BF16}) EXPECT_NE(reg.find(op, "example", t), nullptr) << op_key(op);
  EXPECT_NE(reg.find(OpType::SiluAndMul, "example", DType::F32), nullptr);
  // Vendor ABI 1.1: the ops 1.0 could not marshal, run against reference like any vendor's.
  for (OpType op :
       {OpType::PagedDecodeAttention, OpType::PagedPrefillAttention, OpType::FusedMoe, OpType::GroupedMatmul})
    for (DType t : {DType::F32, DType::BF16}) EXPECT_NE(reg.find(op, "abi11", t), nullptr) << op_key(op);
  EXPECT_NE(reg.find(OpType::PrefillAttention, "abi11", DType::F32), nullptr);
  EXPECT_NE(reg.find(OpType::GroupedMatmul, "fakedev", DType::BF16), nullptr);
}

TEST(HarnessCoverage, EveryOpHasReferenceKernel) {
  const Registry& reg = builtin_registry();
  for (const OpInfo& info : kOpTable) {
    bool found = false;
    for (const KernelEntry* e : reg.entries_for(info.type)) found = found || e->vendor == kReference;
    EXPECT_TRUE(found) << "op '" << info.key << "' (OpType::" << info.name << ") has no reference kernel";
  }
}

TEST(HarnessCoverage, EveryVendorKernelHasReference) {
  const Registry& reg = builtin_registry();
  for (const OpInfo& info : kOpTable) {
    for (const KernelEntry* e : reg.entries_for(info.type)) {
      if (e->vendor == kReference) continue;
      EXPECT_NE(reg.find(info.type, kReference, e->dtype), nullptr)
          << "vendor '" << e->vendor << "' registers " << info.key << "(" << dtype_name(e->dtype) << ") as "
          << e->kernel_name << ", but no reference kernel exists for that dtype to test it against";
    }
  }
}

TEST(HarnessCoverage, EveryOpHasShapeCases) {
  for (const OpInfo& info : kOpTable)
    EXPECT_FALSE(cases_for(info.type).empty())
        << "op '" << info.key << "' has no shape cases in tests/vendors/kernel_harness.h";
}

TEST(HarnessCoverage, EveryRegisteredDtypeHasCases) {
  const Registry& reg = builtin_registry();
  for (const OpInfo& info : kOpTable)
    for (const KernelEntry* e : reg.entries_for(info.type)) {
      bool any = false;
      for (const Case& c : cases_for(info.type)) any = any || c.applies_to(e->dtype);
      EXPECT_TRUE(any) << info.key << "(" << dtype_name(e->dtype) << ") registered by " << e->vendor
                       << " has no case that applies";
    }
}

TEST(HarnessCoverage, CaseNamesAreUnique) {
  for (const OpInfo& info : kOpTable) {
    std::vector<std::string> names;
    for (const Case& c : cases_for(info.type)) names.push_back(c.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << info.key << " repeats a case name";
  }
}

// The harness itself: a kernel that is off by more than the tolerance, or that leaves an output
// untouched, must fail.
void off_by_tolerance(const SigmoidGatedAddArgs& a) {
  const int64_t n = a.y.size(0), h = a.y.size(1);
  for (int64_t t = 0; t < n; ++t) {
    const float g = 1.0f / (1.0f + std::exp(-a.gate.data<float>()[t]));
    for (int64_t c = 0; c < h; ++c) a.out.data<float>()[t * h + c] += g * a.y.data<float>()[t * h + c];
  }
  a.out.data<float>()[0] += 3e-5f * (1.0f + std::fabs(a.out.data<float>()[0]));
}
void does_nothing(const SigmoidGatedAddArgs&) {}

TEST(HarnessSelfTest, CatchesWrongKernels) {
  const KernelEntry* ref = builtin_registry().find(OpType::SigmoidGatedAdd, kReference, DType::F32);
  ASSERT_NE(ref, nullptr);
  const Case& c = cases_for(OpType::SigmoidGatedAdd)[1];
  for (auto* bad : {off_by_tolerance, does_nothing}) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      run_case(OpType::SigmoidGatedAdd, c, DType::F32, reinterpret_cast<void (*)()>(bad), ref->fn, "bad kernel");
    }
    EXPECT_GE(failures.size(), 1) << "the harness accepted a wrong kernel";
  }
  // and the reference against itself passes
  ::testing::TestPartResultArray none;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &none);
    run_case(OpType::SigmoidGatedAdd, c, DType::F32, ref->fn, ref->fn, "reference");
  }
  EXPECT_EQ(none.size(), 0);
}

}  // namespace
}  // namespace opchain::harness
