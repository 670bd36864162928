#include "core/error.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

constexpr int64_t kChannelBlock = 256;  // channels one work item convolves, over every sequence
constexpr int64_t kMaxTaps = 16;

// One block of channels [c0, c1) of every sequence: out = silu(conv) row by row, then the state
// update. Each output sums w[ch, j] * u_j over j in order (SimdKernels::conv_silu_row).
void conv_block(const CausalConv1dArgs& a, const float* wt, int64_t c0, int64_t c1) {
  const SimdKernels& sk = simd();
  const AttnMetadata& m = *a.meta;
  const int64_t c = a.weight.size(0), kw = a.weight.size(1), hist = kw - 1, width = c1 - c0;
  const float* taps_w[kMaxTaps];
  const float* taps_u[kMaxTaps];
  for (int64_t j = 0; j < kw; ++j) taps_w[j] = wt + j * c + c0;
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
      for (int64_t j = 0; j < kw; ++j) taps_u[j] = row(i - hist + j);
      sk.conv_silu_row(taps_u, taps_w, kw, width, out + i * c + c0);
    }
    // Oldest first: row j takes position len - hist + j, which is an older state row (hist + p > j)
    // not yet overwritten, or a new input.
    for (int64_t j = 0; j < hist; ++j) {
      const float* u = row(len - hist + j);
      float* dst = state + j * c + c0;
      if (u)
        std::copy(u, u + width, dst);
      else
        std::fill(dst, dst + width, 0.0f);
    }
  }
}

// The weight [c, K] transposed to [K, c] in f32, so a tap's channels are contiguous.
void transpose_weight(const Tensor& w, float* wt) {
  const int64_t c = w.size(0), kw = w.size(1);
  switch (w.dtype()) {
    case DType::BF16: {
      const uint16_t* src = w.data<uint16_t>();
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < kw; ++j) wt[j * c + ch] = bf16_to_f32(src[ch * kw + j]);
      break;
    }
    case DType::F32: {
      const float* src = w.data<float>();
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < kw; ++j) wt[j * c + ch] = src[ch * kw + j];
      break;
    }
    default:
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < kw; ++j) wt[j * c + ch] = f16_to_f32_fast(w.data<uint16_t>()[ch * kw + j]);
  }
}

}  // namespace

static void causal_conv1d(const CausalConv1dArgs& a) {
  const int64_t c = a.weight.size(0), kw = a.weight.size(1);
  if (kw > kMaxTaps)
    throw InvalidArgumentError("causal_conv1d: kernel width " + std::to_string(kw) + " exceeds the cpu kernel's " +
                               std::to_string(kMaxTaps));
  thread_local std::vector<float> wbuf;
  float* wt = scratch(wbuf, static_cast<size_t>(kw * c));
  transpose_weight(a.weight, wt);
  const int64_t blocks = (c + kChannelBlock - 1) / kChannelBlock;
  parallel_rows(blocks, a.x.size(0) * kChannelBlock * kw, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk)
      conv_block(a, wt, blk * kChannelBlock, std::min(c, (blk + 1) * kChannelBlock));
  });
}

void register_causal_conv1d(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::CausalConv1d>(reg, t, causal_conv1d);
}

}  // namespace opchain::cpu
