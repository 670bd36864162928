#pragma once
// Kernel-harness shape cases of the hybrid-decoder ops (Qwen3-Next / Qwen3.5): the zero-centred and
// gated RMSNorms, the q/k L2 norm, the causal conv, the Gated DeltaNet gates and delta rule, and the
// attention output gate. Included by kernel_harness.h, which owns the machinery.

namespace opchain::harness {

// Sequences of a linear-attention step: make_attn's varlen layout, plus a distinct shuffled state
// slot per sequence (or -1 for the last `padding` sequences) in a pool of spare slots.
struct StateSetup {
  AttnSetup attn;
  int64_t slots = 0;
};

inline StateSetup make_state_step(std::mt19937& g, const std::vector<SeqLens>& seqs, int64_t padding, bool decoding) {
  StateSetup s{make_attn(g, seqs, 16, 0, decoding), static_cast<int64_t>(seqs.size()) + 3};
  std::vector<int32_t> slots = iota_i32(static_cast<int32_t>(s.slots));
  std::shuffle(slots.begin(), slots.end(), g);
  slots.resize(seqs.size());
  for (int64_t i = 0; i < padding; ++i) slots[seqs.size() - 1 - static_cast<size_t>(i)] = -1;
  s.attn.meta->state_slots = i32_tensor(slots);
  return s;
}

inline std::vector<Case> zero_centered_rms_norm_cases() {
  auto mk = [](std::string name, Shape xs, bool residual, bool alias) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  const int64_t h = xs[xs.ndim - 1];
                  Tensor x = rand_f32(g, xs, -2.0f, 2.0f);
                  Tensor w = rand_tensor(g, dt, {h}, -0.5f, 0.5f);  // zero-centred: the stored weight is ~0
                  Tensor res = residual ? rand_f32(g, xs, -2.0f, 2.0f) : Tensor();
                  Instance inst;
                  if (alias) {
                    inst = Instance{{"residual", "x=out"}, {res, x}, {}};
                    inst.call = make_call<OpType::ZeroCenteredRmsNorm>([=](const Outs& o) {
                      return ZeroCenteredRmsNormArgs{o[1], o[0], w, o[1], 1e-6f};
                    });
                  } else if (residual) {
                    inst = Instance{{"residual", "out"}, {res, rand_f32(g, xs)}, {}};
                    inst.call = make_call<OpType::ZeroCenteredRmsNorm>([=](const Outs& o) {
                      return ZeroCenteredRmsNormArgs{x, o[0], w, o[1], 1e-6f};
                    });
                  } else {
                    inst = Instance{{"out"}, {rand_f32(g, xs)}, {}};
                    inst.call = make_call<OpType::ZeroCenteredRmsNorm>([=](const Outs& o) {
                      return ZeroCenteredRmsNormArgs{x, Tensor(), w, o[0], 1e-6f};
                    });
                  }
                  return inst;
                }};
  };
  return {mk("1x64", {1, 64}, false, false), mk("7x33_residual", {7, 33}, true, false),
          mk("300x128_residual", {300, 128}, true, false), mk("qk_norm_3d_5x4x32", {5, 4, 32}, false, false),
          mk("alias_out_is_x_residual_7x33", {7, 33}, true, true)};
}

inline std::vector<Case> l2_norm_cases() {
  auto mk = [](std::string name, int64_t n, int64_t w, int64_t heads, int64_t d) {
    return Case{
        name, [=](DType dt, std::mt19937& g) {
          Instance inst{{"x"}, {rand_tensor(g, dt, {n, w}, -2.0f, 2.0f)}, {}};
          inst.call = make_call<OpType::L2Norm>([=](const Outs& o) { return L2NormArgs{o[0], heads, d, 1e-6f}; });
          return inst;
        }};
  };
  // Columns past heads * d (the v part of a conv output) must stay untouched.
  return {mk("1tok_4heads_d16_of_w100", 1, 100, 4, 16), mk("7tok_2heads_d33_of_w66", 7, 66, 2, 33),
          mk("300tok_8heads_d128_of_w1280", 300, 1280, 8, 128)};
}

inline std::vector<Case> causal_conv1d_cases() {
  auto mk = [](std::string name, std::vector<SeqLens> seqs, int64_t padding, int64_t c, int64_t kw) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  bool decoding = true;
                  for (const auto& s : seqs) decoding = decoding && s.q_len == 1;
                  StateSetup st = make_state_step(g, seqs, padding, decoding);
                  Tensor x = rand_f32(g, {st.attn.rows, c}, -2.0f, 2.0f);
                  Tensor w = rand_tensor(g, dt, {c, kw}, -1.0f, 1.0f);
                  // Fresh sequences must ignore what their slot holds, so every slot starts non-zero.
                  Instance inst{
                      {"conv_state", "out"}, {rand_f32(g, {st.slots, kw - 1, c}), rand_f32(g, {st.attn.rows, c})}, {}};
                  auto meta = st.attn.meta;
                  inst.call = make_call<OpType::CausalConv1d>([=](const Outs& o) {
                    return CausalConv1dArgs{x, w, o[0], o[1], meta.get()};
                  });
                  return inst;
                }};
  };
  return {mk("decode_1seq_c64_k4", {{1, 10}}, 0, 64, 4),
          mk("fresh_1tok_c33_k4", {{1, 1}}, 0, 33, 4),
          mk("3seq_fresh_decode_continued_c70_k4", {{5, 5}, {1, 9}, {7, 20}}, 0, 70, 4),
          mk("continued_2tok_shorter_than_history_k4", {{2, 6}, {1, 2}}, 0, 40, 4),
          mk("decode_b8_pad2_c130_k4", {{1, 3}, {1, 40}, {1, 2}, {1, 17}, {1, 5}, {1, 9}, {1, 1}, {1, 1}}, 2, 130, 4),
          mk("k2_c17", {{4, 4}, {3, 10}}, 0, 17, 2),
          mk("300tok_2seq_c96_k4", {{150, 150}, {150, 190}}, 0, 96, 4)};
}

inline std::vector<Case> gdn_gating_cases() {
  auto mk = [](std::string name, int64_t n, int64_t nv) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor ba = rand_f32(g, {n, 2 * nv}, -25.0f, 25.0f);  // a + dt_bias past softplus' threshold too
                  Tensor a_log = rand_tensor(g, dt, {nv}, -2.0f, 1.0f), dt_bias = rand_tensor(g, dt, {nv}, -1.0f, 1.0f);
                  Instance inst{{"g", "beta"}, {rand_f32(g, {n, nv}), rand_f32(g, {n, nv})}, {}};
                  inst.call = make_call<OpType::GdnGating>([=](const Outs& o) {
                    return GdnGatingArgs{ba, a_log, dt_bias, o[0], o[1]};
                  });
                  return inst;
                }};
  };
  return {mk("1tok_nv4", 1, 4), mk("7tok_nv6", 7, 6), mk("300tok_nv32", 300, 32)};
}

struct DeltaRuleShape {
  std::string name;
  std::vector<SeqLens> seqs;
  int64_t padding, nk, nv, dk, dv;
};

inline std::vector<DeltaRuleShape> delta_rule_shapes() {
  return {{"decode_b1_nk2_nv4_d16", {{1, 5}}, 0, 2, 4, 16, 16},
          {"fresh_1tok_nk1_nv1_dk8_dv12", {{1, 1}}, 0, 1, 1, 8, 12},
          {"decode_b6_pad2_nk2_nv4_dk16_dv24", {{1, 3}, {1, 40}, {1, 2}, {1, 9}, {1, 1}, {1, 1}}, 2, 2, 4, 16, 24},
          {"prefill_70tok_crosses_chunk_nk2_nv4", {{70, 70}}, 0, 2, 4, 16, 16},
          {"mixed_decode_fresh_continued_nk2_nv6_dk24_dv40", {{1, 9}, {33, 33}, {130, 150}}, 0, 2, 6, 24, 40},
          {"odd_lens_2_7_nk1_nv3_dk20_dv12", {{2, 2}, {7, 12}}, 0, 1, 3, 20, 12},
          {"300tok_2seq_nk2_nv4_d32", {{128, 128}, {172, 200}}, 0, 2, 4, 32, 32}};
}

// Inputs as the model feeds them: q and k heads L2-normalised, log-decays <= 0, beta in (0, 1).
inline Instance delta_rule_instance(const DeltaRuleShape& sh, DeltaRuleForm form, DType dt, std::mt19937& g) {
  bool decoding = true;
  for (const auto& s : sh.seqs) decoding = decoding && s.q_len == 1;
  StateSetup st = make_state_step(g, sh.seqs, sh.padding, decoding);
  const int64_t n = st.attn.rows, width = 2 * sh.nk * sh.dk + sh.nv * sh.dv;
  Tensor qkv = rand_tensor(g, dt, {n, width}, -1.0f, 1.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < 2 * sh.nk; ++j) {
      float* x = qkv.data<float>() + t * width + j * sh.dk;
      float ss = 0.0f;
      for (int64_t c = 0; c < sh.dk; ++c) ss += x[c] * x[c];
      for (int64_t c = 0; c < sh.dk; ++c) x[c] /= std::sqrt(ss + 1e-6f);
    }
  Tensor gdecay = rand_f32(g, {n, sh.nv}, -2.0f, 0.0f), beta = rand_f32(g, {n, sh.nv}, 0.0f, 1.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.dk));
  Instance inst{{"state", "out"},
                {rand_f32(g, {st.slots, sh.nv, sh.dk, sh.dv}, -0.5f, 0.5f), rand_f32(g, {n, sh.nv, sh.dv})},
                {}};
  auto meta = st.attn.meta;
  const int64_t nk = sh.nk;
  inst.call = make_call<OpType::GatedDeltaRule>(
      [=](const Outs& o) { return GatedDeltaRuleArgs{qkv, gdecay, beta, o[0], o[1], nk, scale, form, meta.get()}; });
  return inst;
}

inline std::vector<Case> gated_delta_rule_cases() {
  std::vector<Case> cases;
  for (const DeltaRuleShape& sh : delta_rule_shapes())
    for (DeltaRuleForm form : {DeltaRuleForm::Recurrent, DeltaRuleForm::Chunked})
      cases.push_back({sh.name + "_" + delta_rule_form_name(form),
                       [sh, form](DType dt, std::mt19937& g) { return delta_rule_instance(sh, form, dt, g); }});
  return cases;
}

inline std::vector<Case> gated_rms_norm_cases() {
  auto mk = [](std::string name, Shape xs, bool alias) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  const int64_t d = xs[xs.ndim - 1];
                  Tensor x = rand_f32(g, xs, -2.0f, 2.0f), z = rand_f32(g, xs, -4.0f, 4.0f);
                  Tensor w = rand_tensor(g, dt, {d}, 0.5f, 1.5f);
                  Instance inst;
                  if (alias) {
                    inst = Instance{{"x=out"}, {x}, {}};
                    inst.call = make_call<OpType::GatedRmsNorm>([=](const Outs& o) {
                      return GatedRmsNormArgs{o[0], z, w, o[0], 1e-6f};
                    });
                  } else {
                    inst = Instance{{"out"}, {rand_f32(g, xs)}, {}};
                    inst.call = make_call<OpType::GatedRmsNorm>([=](const Outs& o) {
                      return GatedRmsNormArgs{x, z, w, o[0], 1e-6f};
                    });
                  }
                  return inst;
                }};
  };
  return {mk("1x16", {1, 16}, false), mk("7x4x24", {7, 4, 24}, false), mk("300x4x32", {300, 4, 32}, false),
          mk("alias_out_is_x_5x3x33", {5, 3, 33}, true)};
}

inline std::vector<Case> sigmoid_gate_mul_cases() {
  auto mk = [](std::string name, int64_t n, int64_t m) {
    return Case{
        name, [=](DType dt, std::mt19937& g) {
          Tensor gate = rand_f32(g, {n, m}, -6.0f, 6.0f);
          Instance inst{{"x"}, {rand_tensor(g, dt, {n, m}, -2.0f, 2.0f)}, {}};
          inst.call = make_call<OpType::SigmoidGateMul>([=](const Outs& o) { return SigmoidGateMulArgs{gate, o[0]}; });
          return inst;
        }};
  };
  return {mk("1x64", 1, 64), mk("7x33", 7, 33), mk("300x128", 300, 128)};
}

}  // namespace opchain::harness
