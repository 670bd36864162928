// Note [Delta rule forms]: the chunked and the recurrent evaluation of gated_delta_rule are the same
// function. On every shape of the harness, each vendor's kernel run in both forms on the same inputs
// gives the same outputs and final states within the op's tolerance.
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

TEST(GatedDeltaRuleForms, ChunkedEqualsRecurrentOnEveryVendor) {
  const Registry& reg = builtin_registry();
  int compared = 0;
  for (const KernelEntry* e : reg.entries_for(OpType::GatedDeltaRule)) {
    for (const DeltaRuleShape& sh : delta_rule_shapes()) {
      std::mt19937 g1(seed_of(sh.name)), g2(seed_of(sh.name));
      const Instance rec = delta_rule_instance(sh, DeltaRuleForm::Recurrent, e->dtype, g1);
      const Instance chk = delta_rule_instance(sh, DeltaRuleForm::Chunked, e->dtype, g2);
      Outs a = clone_all(rec.outs), b = clone_all(chk.outs);
      ASSERT_TRUE(bit_equal(a[0], b[0])) << "the two instances must start from the same state";
      rec.call(e->fn, a);
      chk.call(e->fn, b);
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string err = compare(a[i], b[i], op_info(OpType::GatedDeltaRule).tolerance);
        EXPECT_TRUE(err.empty()) << e->kernel_name << ", " << sh.name << ", output '" << rec.out_names[i]
                                 << "': chunked vs recurrent: " << err;
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 2 * static_cast<int>(delta_rule_shapes().size())) << "reference and cpu should both be compared";
}

// A chunk of one token is walked, so single-token sequences give the same bits in either form.
TEST(GatedDeltaRuleForms, DecodingSequencesAreBitIdenticalInBothForms) {
  for (const KernelEntry* e : builtin_registry().entries_for(OpType::GatedDeltaRule)) {
    const DeltaRuleShape sh = delta_rule_shapes()[2];  // a decode batch with padding
    std::mt19937 g1(7), g2(7);
    const Instance rec = delta_rule_instance(sh, DeltaRuleForm::Recurrent, e->dtype, g1);
    const Instance chk = delta_rule_instance(sh, DeltaRuleForm::Chunked, e->dtype, g2);
    Outs a = clone_all(rec.outs), b = clone_all(chk.outs);
    rec.call(e->fn, a);
    chk.call(e->fn, b);
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(bit_equal(a[i], b[i])) << e->kernel_name << " " << rec.out_names[i];
  }
}

}  // namespace
}  // namespace opchain::harness
