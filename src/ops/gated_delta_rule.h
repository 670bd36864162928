#pragma once
// Layer 4: the `gated_delta_rule` op's arguments. Kernel signature: void(const GatedDeltaRuleArgs&).
#include <cstdint>
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/step_metadata.h"

namespace opchain {

// Two evaluations of the same function (Note [Delta rule forms] in backends/gated_delta_rule.h).
// Recurrent walks every sequence's tokens one by one. Chunked solves blocks of kDeltaRuleChunk tokens
// of a sequence at once; a sequence with a single new token is still walked, so a decoding sequence
// computes the same bits in a mixed prefill + decode step as in a pure decode step.
enum class DeltaRuleForm : uint8_t { Recurrent, Chunked };
inline const char* delta_rule_form_name(DeltaRuleForm f) {
  return f == DeltaRuleForm::Chunked ? "chunked" : "recurrent";
}
inline constexpr int64_t kDeltaRuleChunk = 64;
void describe_field(FieldText& out, const char* name, DeltaRuleForm f);  // "form=chunked"

// The gated delta rule of Gated DeltaNet, per sequence of the step (varlen layout of meta) and value
// head h, which reads key head h / (nv / nk). State S [dk, dv] in f32, for each token t in order:
//   S <- exp(g[t, h]) * S                          decay first
//   S <- S + k_t (beta[t, h] * (v_t - S^T k_t))^T   the delta-rule write
//   out[t, h] = S^T (scale * q_t)                  read after the write
// S starts from the sequence's state slot when it has cached tokens (kv_seqlens > q_seqlens), else
// from zeros, and the final S is written back to the slot. q and k arrive L2-normalised (l2_norm).
// A sequence whose slot is -1 (graph padding) reads and writes no state; its rows are 0.
struct GatedDeltaRuleArgs {
  Tensor qkv;               // f32 [n, 2*nk*dk + nv*dv]: per token q (nk heads of dk), k (nk x dk), v (nv x dv)
  Tensor g;                 // f32 [n, nv]
  Tensor beta;              // f32 [n, nv]
  Tensor state;             // f32 [slots, nv, dk, dv], updated in place
  Tensor out;               // f32 [n, nv, dv]
  int64_t num_k_heads = 0;  // nk; nv, dk and dv are the state's dims
  float scale = 1.0f;       // dk^-0.5
  DeltaRuleForm form = DeltaRuleForm::Recurrent;
  const AttnMetadata* meta = nullptr;

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = GatedDeltaRuleArgs;
    return std::tuple{Field{"qkv", Role::In, &A::qkv},
                      Field{"g", Role::In, &A::g},
                      Field{"beta", Role::In, &A::beta},
                      Field{"state", Role::InOut, &A::state},
                      Field{"num_k_heads", Role::Attr, &A::num_k_heads},
                      Field{"scale", Role::Attr, &A::scale},
                      Field{"form", Role::Attr, &A::form},
                      Field{"meta", Role::Meta, &A::meta},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
