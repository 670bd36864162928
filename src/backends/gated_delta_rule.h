#pragma once
// The default delta-rule impl: one nn GatedDeltaRule call is one gated_delta_rule launch, in the form the
// step's token counts ask for.
//
// Note [Delta rule forms]
// gated_delta_rule has two evaluations of one function (ops/gated_delta_rule.h). The recurrent form
// walks tokens one by one: per token it reads and writes the whole [dk, dv] state, which is the
// least work for a decode step. The chunked form solves kDeltaRuleChunk tokens of a sequence at once
// through products within the chunk and touches the state once per chunk, which is what prefill
// wants. select_delta_rule_form picks from the step's token counts: recurrent when every sequence
// brings one token (a decode step), chunked otherwise. The chunked form still walks any single-token
// sequence, so a decoding sequence gets the same bits whether its step also carries a prefill or
// not (batch invariance), and a captured decode graph, whose steps are all decode steps, freezes
// the recurrent choice correctly (Note [Graph capture], 3). The harness checks the two forms
// against each other on every vendor (tests/vendors/gated_delta_rule_forms_test.cpp). The form is the
// backend's hint, not a contract on bits: the cpu vendor walks every token in both (a block of state
// columns at a time for a run of tokens), so a token's bits do not depend on how the scheduler cut its
// prompt into steps, which depends on the load, nor on a preemption's recompute.
#include "backends/op_impl.h"

namespace opchain {

DeltaRuleForm select_delta_rule_form(const AttnMetadata& meta);

class DefaultGatedDeltaRuleImpl final : public GatedDeltaRuleImpl {
 public:
  DefaultGatedDeltaRuleImpl(const OpsBackend& backend, const ImplBuildParams& p);
  // Sets args.form (select_delta_rule_form) and args.meta = &ctx.attn.
  void forward(const StepContext& ctx, GatedDeltaRuleArgs args) const override;

 private:
  std::unique_ptr<KernelImpl<OpType::GatedDeltaRule>> kernel_;
};

}  // namespace opchain
