#pragma once
// Kernel-harness cases of the matmul ops with quantised weights (Note [Quantised weights]): random
// codes and parameters of each scheme for the dtype under test (u8: int4 groups, i8: int8 channels,
// f8e4m3: fp8 blocks and channels), in every precision (Note [Matmul precision]). Each case has six
// variants per dtype: plain, asymmetric / act-order / per-channel, partial groups and blocks, groups of 64
// (the AVX-512 int4 tile's narrow chunk; the AVX2 tile's 16 divides the plain variant's 32), groups of
// 128 (GPTQ's usual; the AVX-512 tile's wide chunk where k is a multiple of 128 too) and, for int4, an
// act-order weight as the loader keeps it: columns sorted by group (input_order), groups of 64 (the other
// dtypes repeat their plain variant there).

namespace opchain::harness {

struct QuantSpec {
  QuantScheme scheme;
  int64_t group = 0;  // int4 groups, fp8 blocks
  bool asym = false;
  bool g_idx = false;   // group_of: channels assigned to groups out of order
  bool sorted = false;  // input_order: the columns hold the channels in a random order
};

constexpr int kQuantVariants = 6;

inline QuantSpec quant_spec_for(DType dt, int variant, int64_t in) {
  switch (dt) {
    case DType::U8:
      if (variant == 1) return {QuantScheme::Int4Group, 16, true, true};
      if (variant == 2) return {QuantScheme::Int4Group, 24, false, false};  // in % 24 != 0: a short last group
      if (variant == 3) return {QuantScheme::Int4Group, 64, true, false};   // the AVX-512 tile's chunk
      if (variant == 4) return {QuantScheme::Int4Group, 128, true, false};  // its wide chunk
      if (variant == 5) return {QuantScheme::Int4Group, 64, true, false, true};
      return {QuantScheme::Int4Group, 32, false, false};
    case DType::I8:
      return {QuantScheme::Int8Channel, 0, variant == 1 || variant == 3, false};
    default:
      if (variant == 1) return {QuantScheme::Fp8Channel, 0, false, false};
      return {QuantScheme::Fp8Block, variant == 2 ? 48 : variant == 4 ? 128 : 32, false, false};  // 48: partial edges
  }
  (void)in;
}

// Random codes and parameters of one [out, in] quantised weight; activations per the scheme's format.
inline Weight make_quant_weight(std::mt19937& g, DType dt, int variant, int64_t out, int64_t in) {
  const QuantSpec sp = quant_spec_for(dt, variant, in);
  auto q = std::make_shared<QuantParams>();
  q->scheme = sp.scheme;
  q->in_features = in;
  q->group_size = sp.group;
  const int64_t groups = sp.group > 0 ? (in + sp.group - 1) / sp.group : 1;
  // Scales that put the dequantised weights near +-1/sqrt(in), as trained layers are (the codes' own
  // ranges: +-8 for int4, +-127 for int8, up to 448 for fp8, mostly tens).
  const float code_range = sp.scheme == QuantScheme::Int4Group     ? 8.0f
                           : sp.scheme == QuantScheme::Int8Channel ? 127.0f
                                                                   : 100.0f;
  const float base = 1.0f / (code_range * std::sqrt(static_cast<float>(in)));
  q->scales = rand_f32(g, {out, groups}, 0.5f * base, 1.5f * base);
  Weight w;
  switch (sp.scheme) {
    case QuantScheme::Int4Group: {
      w.values = Tensor::empty(DType::U8, {out, (in + 1) / 2});
      for (int64_t i = 0; i < w.values.numel(); ++i) w.values.data<uint8_t>()[i] = static_cast<uint8_t>(g());
      if (sp.asym) {
        q->zeros = Tensor::empty(DType::F32, {out, groups});
        for (int64_t i = 0; i < q->zeros.numel(); ++i)
          q->zeros.data<float>()[i] = static_cast<float>(randint(g, 0, 15));
      }
      if (sp.g_idx) {  // act-order: channels assigned to groups out of order, each group still group_size wide
        std::vector<int32_t> perm = iota_i32(static_cast<int32_t>(in));
        std::shuffle(perm.begin(), perm.end(), g);
        q->group_of = Tensor::empty(DType::I32, {in});
        for (int64_t k = 0; k < in; ++k)
          q->group_of.data<int32_t>()[k] = perm[static_cast<size_t>(k)] / static_cast<int32_t>(sp.group);
      }
      if (sp.sorted) {
        std::vector<int32_t> perm = iota_i32(static_cast<int32_t>(in));
        std::shuffle(perm.begin(), perm.end(), g);
        q->input_order = Tensor::empty(DType::I32, {in});
        std::copy(perm.begin(), perm.end(), q->input_order.data<int32_t>());
      }
      q->act = ActQuant::None;
      break;
    }
    case QuantScheme::Int8Channel:
      w.values = Tensor::empty(DType::I8, {out, in});
      for (int64_t i = 0; i < w.values.numel(); ++i)
        w.values.data<int8_t>()[i] = static_cast<int8_t>(randint(g, -127, 127));
      if (sp.asym) {
        q->zeros = Tensor::empty(DType::F32, {out, 1});
        for (int64_t i = 0; i < out; ++i) q->zeros.data<float>()[i] = static_cast<float>(randint(g, -20, 20));
      }
      q->act = ActQuant::Int8Token;
      break;
    case QuantScheme::Fp8Block:
    case QuantScheme::Fp8Channel:
      w.values = Tensor::empty(DType::F8E4M3, {out, in});
      for (int64_t i = 0; i < w.values.numel(); ++i) {
        uint8_t b = static_cast<uint8_t>(g());
        if ((b & 0x7f) == 0x7f) b ^= 1;  // no NaN codes
        w.values.data<uint8_t>()[i] = b;
      }
      q->act = ActQuant::Fp8Group;
      q->act_group = sp.scheme == QuantScheme::Fp8Block ? sp.group : in;
      break;
  }
  w.quant = q;
  return w;
}

// Every precision a quantised weight can meet (Note [Matmul precision]).
constexpr MatmulPrecision kQuantPrecisions[] = {MatmulPrecision::F32, MatmulPrecision::Bf16, MatmulPrecision::Quantized,
                                                MatmulPrecision::Int8};

inline const char* precision_tag(MatmulPrecision p) {
  return p == MatmulPrecision::F32    ? "f32"
         : p == MatmulPrecision::Bf16 ? "bf16x"
         : p == MatmulPrecision::Int8 ? "i8act"
                                      : "qact";
}

inline std::vector<Case> quant_linear_cases() {
  std::vector<Case> cases;
  struct S {
    int64_t rows, in, out;
    bool bias;
  };
  for (const S& s :
       {S{1, 96, 40, false}, S{1, 256, 36, false}, S{2, 128, 20, true}, S{5, 130, 33, true}, S{37, 192, 70, false}})
    for (int variant = 0; variant < kQuantVariants; ++variant)
      for (MatmulPrecision p : kQuantPrecisions) {
        const std::string name = "q" + std::to_string(variant) + "_" + std::to_string(s.rows) + "x" +
                                 std::to_string(s.in) + "_to_" + std::to_string(s.out) + (s.bias ? "_bias_" : "_") +
                                 precision_tag(p);
        cases.push_back({name,
                         [=](DType dt, std::mt19937& g) {
                           Tensor x = rand_f32(g, {s.rows, s.in}, -2.0f, 2.0f);
                           const Weight w = make_quant_weight(g, dt, variant, s.out, s.in);
                           Tensor b = s.bias ? rand_f32(g, {s.out}) : Tensor();
                           Instance inst{{"out"}, {rand_f32(g, {s.rows, s.out})}, {}};
                           inst.call = make_call<OpType::Linear>(
                               [=](const Outs& o) { return LinearArgs{x, w.values, b, o[0], p, w.quant.get()}; });
                           return inst;
                         },
                         true});
      }
  return cases;
}

inline std::vector<Case> quant_grouped_matmul_cases() {
  std::vector<Case> cases;
  for (int variant = 0; variant < kQuantVariants; ++variant)
    for (MatmulPrecision p : kQuantPrecisions) {
      const int64_t kin = variant == 4 ? 256 : 96;  // groups of 128 need a k of whole groups to take the wide chunk
      cases.push_back({"q" + std::to_string(variant) + "_rows_3_0_1_9_k" + std::to_string(kin) + "_n40_ld80_col40_" +
                           precision_tag(p),
                       [=](DType dt, std::mt19937& g) {
                         const std::vector<int> counts = {3, 0, 1, 9};
                         std::vector<int32_t> off{0};
                         for (int c : counts) off.push_back(off.back() + c);
                         const int64_t m = off.back(), nout = 40;
                         Tensor x = rand_f32(g, {m, kin}, -2.0f, 2.0f);
                         auto w = std::make_shared<std::vector<Tensor>>();
                         auto q = std::make_shared<std::vector<std::shared_ptr<const QuantParams>>>();
                         for (size_t e = 0; e < counts.size(); ++e) {
                           const Weight qw = make_quant_weight(g, dt, variant, nout, kin);
                           w->push_back(qw.values);
                           q->push_back(qw.quant);
                         }
                         Tensor offsets = i32_tensor(off);
                         Instance inst{{"out"}, {rand_f32(g, {m, 80})}, {}};
                         inst.call = make_call<OpType::GroupedMatmul>([=](const Outs& o) {
                           return GroupedMatmulArgs{x, offsets, w.get(), o[0], 40, p, q.get()};
                         });
                         return inst;
                       },
                       true});
    }
  return cases;
}

inline std::vector<Case> quant_fused_moe_cases() {
  std::vector<Case> cases;
  for (int variant = 0; variant < kQuantVariants; ++variant)
    for (MatmulPrecision p : kQuantPrecisions) {
      const int64_t h = variant == 4 ? 128 : 64;
      cases.push_back(
          {"q" + std::to_string(variant) + "_9tok_pad2_h" + std::to_string(h) + "_i48_e5_k2_" + precision_tag(p),
           [=](DType dt, std::mt19937& g) {
             const int64_t n = 9, pad = 2, rows = n + pad, inter = 48, experts = 5, k = 2;
             Tensor hidden = rand_f32(g, {rows, h}, -2.0f, 2.0f), ids, weights;
             make_routing(g, rows, k, {0, 1, 2, 4}, ids, weights);  // expert 3 receives no token
             auto ew = std::make_shared<ExpertWeights>();
             for (int64_t e = 0; e < experts; ++e) {
               const Weight gw = make_quant_weight(g, dt, variant, inter, h);
               const Weight uw = make_quant_weight(g, dt, variant, inter, h);
               const Weight dw = make_quant_weight(g, dt, variant, h, inter);
               ew->gate.push_back(gw.values);
               ew->up.push_back(uw.values);
               ew->down.push_back(dw.values);
               ew->gate_q.push_back(gw.quant);
               ew->up_q.push_back(uw.quant);
               ew->down_q.push_back(dw.quant);
             }
             auto meta = make_moe_meta(n, pad, {4});
             Instance inst{{"out"}, {rand_f32(g, {rows, h})}, {}};
             inst.call = make_call<OpType::FusedMoe>(
                 [=](const Outs& o) { return FusedMoeArgs{hidden, ew.get(), weights, ids, o[0], meta.get(), p}; });
             return inst;
           },
           true, p == MatmulPrecision::F32 ? 0.0 : 1e-3});
    }
  return cases;
}

}  // namespace opchain::harness
