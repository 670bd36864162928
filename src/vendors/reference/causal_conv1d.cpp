#include <vector>

#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void causal_conv1d(const CausalConv1dArgs& a) {
  const AttnMetadata& m = *a.meta;
  const int64_t c = a.weight.size(0), kw = a.weight.size(1), hist = kw - 1;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    const int64_t past = m.kv_seqlens.data<int32_t>()[b] - len;
    const int32_t slot = m.state_slots.data<int32_t>()[b];
    float* out = a.out.data<float>() + start * c;
    if (slot < 0) {
      for (int64_t i = 0; i < len * c; ++i) out[i] = 0.0f;
      continue;
    }
    float* state = a.conv_state.data<float>() + static_cast<int64_t>(slot) * hist * c;
    // The K-1 inputs before the step's first token, oldest first.
    std::vector<float> before(static_cast<size_t>(hist * c), 0.0f);
    if (past > 0) before.assign(state, state + hist * c);
    // Input at position p relative to the step's first token (p < 0: before it).
    auto input = [&](int64_t p, int64_t ch) {
      return p >= 0 ? a.x.data<float>()[(start + p) * c + ch] : before[static_cast<size_t>((hist + p) * c + ch)];
    };
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0.0f;
        for (int64_t j = 0; j < kw; ++j) acc += at(a.weight, ch, j) * input(i - hist + j, ch);
        out[i * c + ch] = silu(acc);
      }
    }
    for (int64_t j = 0; j < hist; ++j)
      for (int64_t ch = 0; ch < c; ++ch) state[j * c + ch] = input(len - hist + j, ch);
  }
}

void register_causal_conv1d(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::CausalConv1d>(kReferenceVendor, t, causal_conv1d, "reference::causal_conv1d");
}

}  // namespace opchain::reference
