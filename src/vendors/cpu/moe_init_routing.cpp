#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// A counting sort of the (token, choice) pairs by expert, stable in pair order (token, then choice),
// on the calling thread (O(n*k)); then the rows are gathered in parallel. Inactive rows and ids
// outside [0, num_experts) route nowhere (-1).
void moe_init_routing(const MoeInitRoutingArgs& a) {
  const int64_t n = a.topk_ids.size(0), k = a.topk_ids.size(1), h = a.x.size(1), experts = a.num_experts;
  const int32_t* ids = a.topk_ids.data<int32_t>();
  int32_t* offsets = a.expert_offsets.data<int32_t>();
  int32_t* where = a.pair_to_sorted.data<int32_t>();
  thread_local std::vector<int32_t> cursor_buf, source_buf;
  int32_t* cursor = scratch(cursor_buf, static_cast<size_t>(experts + 1));
  int32_t* source = scratch(source_buf, static_cast<size_t>(std::max<int64_t>(n * k, 1)));  // sorted row -> token
  std::fill(cursor, cursor + experts + 1, 0);
  for (int64_t t = 0; t < n; ++t) {
    if (!moe_row_active(a.meta, t)) continue;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = ids[t * k + j];
      if (e >= 0 && e < experts) ++cursor[e + 1];
    }
  }
  for (int64_t e = 0; e < experts; ++e) cursor[e + 1] += cursor[e];
  for (int64_t e = 0; e <= experts; ++e) offsets[e] = cursor[e];
  for (int64_t t = 0; t < n; ++t) {
    const bool active = moe_row_active(a.meta, t);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = ids[t * k + j];
      if (!active || e < 0 || e >= experts) {
        where[t * k + j] = -1;
        continue;
      }
      const int32_t row = cursor[e]++;
      where[t * k + j] = row;
      source[row] = static_cast<int32_t>(t);
    }
  }
  const int64_t routed = offsets[experts];
  const float* x = a.x.data<float>();
  float* xs = a.x_sorted.data<float>();
  const size_t bytes = static_cast<size_t>(h) * sizeof(float);
  parallel_rows(routed, h, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(xs + r * h, x + static_cast<int64_t>(source[r]) * h, bytes);
  });
}

void register_moe_init_routing(Registry& reg) { add_kernel<OpType::MoeInitRouting>(reg, DType::F32, moe_init_routing); }

}  // namespace opchain::cpu
