#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// Copies each token's k/v rows into its cache slot; slot -1 (padding) or out of range is skipped.
static void fill_kv_cache(const FillKvCacheArgs& a) {
  const int64_t n = a.k.size(0), row = a.k.size(1) * a.k.size(2);
  const int64_t slots = a.k_cache.size(0) * a.k_cache.size(1);
  const size_t bytes = static_cast<size_t>(row) * sizeof(float);
  parallel_rows(n, 2 * row, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t slot = a.meta->slot_mapping.data<int32_t>()[i];
      if (slot < 0 || slot >= slots) continue;
      std::memcpy(a.k_cache.data<float>() + slot * row, a.k.data<float>() + i * row, bytes);
      std::memcpy(a.v_cache.data<float>() + slot * row, a.v.data<float>() + i * row, bytes);
    }
  });
}

void register_fill_kv_cache(Registry& reg) { add_kernel<OpType::FillKvCache>(reg, DType::F32, fill_kv_cache); }

}  // namespace opchain::cpu
