// Batch invariance of the cpu vendor's linear-attention kernels (Note [cpu kernels]): a sequence's
// outputs and final states are the same bits alone as inside a step with other sequences of other
// lengths, on every SIMD path the machine has, for causal_conv1d and both forms of gated_delta_rule.
#include <thread>

#include "vendors/cpu/cpu_kernels.h"
#include "vendors/kernel_harness.h"

namespace opchain::harness {
namespace {

struct IsaGuard {
  cpu::Isa isa = cpu::active_isa();
  ~IsaGuard() { cpu::set_active_isa(isa); }
};

// One step of `seqs` (with slots 0..n-1) and the same step cut into single-sequence steps.
struct Step {
  std::vector<SeqLens> seqs;
  std::shared_ptr<AttnMetadata> meta;
  int64_t rows = 0;
};

Step make_step(const std::vector<SeqLens>& seqs) {
  std::mt19937 g(1);
  Step s{seqs, make_attn(g, seqs, 16, 0, false).meta, 0};
  bool decoding = true;
  for (const auto& q : seqs) {
    s.rows += q.q_len;
    decoding = decoding && q.q_len == 1;
  }
  s.meta->is_decoding = decoding;
  s.meta->state_slots = i32_tensor(iota_i32(static_cast<int32_t>(seqs.size())));
  return s;
}

// Sequence b alone: its rows, its slot (the same one), its lengths.
std::shared_ptr<AttnMetadata> alone_meta(const Step& s, int64_t b) {
  auto m = std::make_shared<AttnMetadata>();
  const SeqLens& q = s.seqs[static_cast<size_t>(b)];
  m->batch_size = 1;
  m->num_tokens = q.q_len;
  m->is_decoding = q.q_len == 1;
  m->max_q_seqlen = q.q_len;
  m->max_kv_seqlen = q.kv_len;
  m->q_start_loc = i32_tensor({0});
  m->q_seqlens = i32_tensor({q.q_len});
  m->kv_seqlens = i32_tensor({q.kv_len});
  m->state_slots = i32_tensor({static_cast<int32_t>(b)});
  return m;
}

int64_t start_of(const Step& s, int64_t b) { return s.meta->q_start_loc.data<int32_t>()[b]; }

bool rows_equal(const Tensor& a, int64_t a_row, const Tensor& b, int64_t b_row, int64_t rows) {
  const int64_t w = a.numel() / a.size(0);
  return std::memcmp(a.data<float>() + a_row * w, b.data<float>() + b_row * w, static_cast<size_t>(rows * w) * 4) == 0;
}

const std::vector<SeqLens> kMixed = {{1, 9}, {70, 70}, {3, 40}, {1, 1}, {20, 20}, {130, 200}};
const std::vector<SeqLens> kDecode = {{1, 9}, {1, 70}, {1, 3}, {1, 1}, {1, 20}};

TEST(CpuLinearAttention, DeltaRuleSequenceAloneEqualsInABatch) {
  IsaGuard guard;
  const auto kernel = resolve_kernel<OpType::GatedDeltaRule>(builtin_registry(), kCpuVendor, DType::F32);
  const int64_t nk = 2, nv = 4, dk = 32, dv = 48, width = 2 * nk * dk + nv * dv;
  for (cpu::Isa isa : cpu::kAllIsas) {
    if (!cpu::set_active_isa(isa)) continue;
    for (DeltaRuleForm form : {DeltaRuleForm::Recurrent, DeltaRuleForm::Chunked}) {
      const Step s = make_step(form == DeltaRuleForm::Recurrent ? kDecode : kMixed);
      std::mt19937 g(3);
      Tensor qkv = rand_f32(g, {s.rows, width}, -0.3f, 0.3f), gd = rand_f32(g, {s.rows, nv}, -1.0f, 0.0f);
      Tensor beta = rand_f32(g, {s.rows, nv}, 0.0f, 1.0f);
      const Tensor state0 = rand_f32(g, {static_cast<int64_t>(s.seqs.size()), nv, dk, dv}, -0.5f, 0.5f);
      Tensor state = clone(state0), out = Tensor::empty(DType::F32, {s.rows, nv, dv});
      kernel.fn(GatedDeltaRuleArgs{qkv, gd, beta, state, out, nk, 0.2f, form, s.meta.get()});
      for (int64_t b = 0; b < static_cast<int64_t>(s.seqs.size()); ++b) {
        const int64_t start = start_of(s, b), len = s.seqs[static_cast<size_t>(b)].q_len;
        auto m = alone_meta(s, b);
        Tensor st = clone(state0), o = Tensor::empty(DType::F32, {len, nv, dv});
        kernel.fn(GatedDeltaRuleArgs{qkv.slice_rows(start, start + len), gd.slice_rows(start, start + len),
                                     beta.slice_rows(start, start + len), st, o, nk, 0.2f, form, m.get()});
        EXPECT_TRUE(rows_equal(out, start, o, 0, len))
            << cpu::isa_name(isa) << " " << delta_rule_form_name(form) << " seq " << b;
        EXPECT_TRUE(rows_equal(state, b, st, b, 1))
            << cpu::isa_name(isa) << " " << delta_rule_form_name(form) << " state " << b;
      }
    }
  }
}

TEST(CpuLinearAttention, ConvSequenceAloneEqualsInABatch) {
  IsaGuard guard;
  const auto kernel = resolve_kernel<OpType::CausalConv1d>(builtin_registry(), kCpuVendor, DType::BF16);
  const int64_t c = 200, kw = 4;
  for (cpu::Isa isa : cpu::kAllIsas) {
    if (!cpu::set_active_isa(isa)) continue;
    const Step s = make_step(kMixed);
    std::mt19937 g(5);
    Tensor x = rand_f32(g, {s.rows, c}), w = rand_tensor(g, DType::BF16, {c, kw});
    const Tensor state0 = rand_f32(g, {static_cast<int64_t>(s.seqs.size()), kw - 1, c});
    Tensor state = clone(state0), out = Tensor::empty(DType::F32, {s.rows, c});
    kernel.fn(CausalConv1dArgs{x, w, state, out, s.meta.get()});
    for (int64_t b = 0; b < static_cast<int64_t>(s.seqs.size()); ++b) {
      const int64_t start = start_of(s, b), len = s.seqs[static_cast<size_t>(b)].q_len;
      auto m = alone_meta(s, b);
      Tensor st = clone(state0), o = Tensor::empty(DType::F32, {len, c});
      kernel.fn(CausalConv1dArgs{x.slice_rows(start, start + len), w, st, o, m.get()});
      EXPECT_TRUE(rows_equal(out, start, o, 0, len)) << cpu::isa_name(isa) << " seq " << b;
      EXPECT_TRUE(rows_equal(state, b, st, b, 1)) << cpu::isa_name(isa) << " state " << b;
    }
  }
}

}  // namespace
}  // namespace opchain::harness
