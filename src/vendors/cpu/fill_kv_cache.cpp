#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// Copies each token's k/v rows into its cache slot; slot -1 (padding) or out of range is skipped.
// A bf16 cache gets each value rounded to nearest even, as reference does (Note [KV cache dtype]).
static void fill_kv_cache(const FillKvCacheArgs& a) {
  const int64_t n = a.k.size(0), row = a.k.size(1) * a.k.size(2);
  const int64_t slots = a.k_cache.size(0) * a.k_cache.size(1);
  const bool bf16 = a.k_cache.dtype() == DType::BF16;
  parallel_rows(n, 2 * row, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t slot = a.meta->slot_mapping.data<int32_t>()[i];
      if (slot < 0 || slot >= slots) continue;
      const float* k = a.k.data<float>() + i * row;
      const float* v = a.v.data<float>() + i * row;
      if (bf16) {
        uint16_t* kc = a.k_cache.data<uint16_t>() + slot * row;
        uint16_t* vc = a.v_cache.data<uint16_t>() + slot * row;
        for (int64_t c = 0; c < row; ++c) kc[c] = f32_to_bf16(k[c]);
        for (int64_t c = 0; c < row; ++c) vc[c] = f32_to_bf16(v[c]);
      } else {
        std::memcpy(a.k_cache.data<float>() + slot * row, k, static_cast<size_t>(row) * sizeof(float));
        std::memcpy(a.v_cache.data<float>() + slot * row, v, static_cast<size_t>(row) * sizeof(float));
      }
    }
  });
}

void register_fill_kv_cache(Registry& reg) {
  add_kernel<OpType::FillKvCache>(reg, DType::F32, fill_kv_cache);
  add_kernel<OpType::FillKvCache>(reg, DType::BF16, fill_kv_cache);
}

}  // namespace opchain::cpu
