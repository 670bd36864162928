#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

constexpr int64_t kChannelBlock = 64;  // channels one work item convolves, over every sequence

// One block of channels [c0, c1) of every sequence: out = silu(conv), then the state update. Each
// output is sum_j w[ch, j] * u_j in j order, as the reference sums it.
void conv_block(const CausalConv1dArgs& a, const float* wt, int64_t c0, int64_t c1) {
  const AttnMetadata& m = *a.meta;
  const int64_t c = a.weight.size(0), kw = a.weight.size(1), hist = kw - 1, width = c1 - c0;
  float acc[kChannelBlock];
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    const bool has_past = m.kv_seqlens.data<int32_t>()[b] > len;
    const int32_t slot = m.state_slots.data<int32_t>()[b];
    float* out = a.out.data<float>() + start * c;
    if (slot < 0) {
      for (int64_t i = 0; i < len; ++i) std::fill(out + i * c + c0, out + i * c + c1, 0.0f);
      continue;
    }
    float* state = a.conv_state.data<float>() + static_cast<int64_t>(slot) * hist * c;
    // Input row at position p relative to the step's first token; null: a zero row (no past).
    auto row = [&](int64_t p) -> const float* {
      if (p >= 0) return a.x.data<float>() + (start + p) * c + c0;
      return has_past ? state + (hist + p) * c + c0 : nullptr;
    };
    for (int64_t i = 0; i < len; ++i) {
      std::fill(acc, acc + width, 0.0f);
      for (int64_t j = 0; j < kw; ++j) {
        const float* u = row(i - hist + j);
        const float* w = wt + j * c + c0;
        if (!u) continue;  // a zero input adds nothing
        for (int64_t ch = 0; ch < width; ++ch) acc[ch] += w[ch] * u[ch];
      }
      simd().silu_mul(acc, nullptr, out + i * c + c0, width);
    }
    // Oldest first: row j takes position len - hist + j, which is an older state row (hist + p > j)
    // not yet overwritten, or a new input.
    for (int64_t j = 0; j < hist; ++j) {
      const float* u = row(len - hist + j);
      float* dst = state + j * c + c0;
      if (u) std::copy(u, u + width, dst);
      else std::fill(dst, dst + width, 0.0f);
    }
  }
}

}  // namespace

static void causal_conv1d(const CausalConv1dArgs& a) {
  const int64_t c = a.weight.size(0), kw = a.weight.size(1);
  // The weight transposed to [K, c] in f32, so the channel loop reads it contiguously.
  thread_local std::vector<float> wbuf;
  float* wt = scratch(wbuf, static_cast<size_t>(kw * c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t j = 0; j < kw; ++j) wt[j * c + ch] = load_as_f32(a.weight.raw(), a.weight.dtype(), static_cast<size_t>(ch * kw + j));
  const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
  parallel_rows(blocks, a.x.size(0) * kChannelBlock * kw, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) conv_block(a, wt, blk * kChannelBlock, std::min(c, (blk + 1) * kChannelBlock));
  });
}

void register_causal_conv1d(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::CausalConv1d>(reg, t, causal_conv1d);
}

}  // namespace opchain::cpu
