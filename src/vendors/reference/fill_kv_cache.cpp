#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// Note [KV cache dtype]: a bf16 cache holds each value rounded to nearest even (f32_to_bf16).
static void fill_kv_cache(const FillKvCacheArgs& a) {
  const int64_t n = a.k.size(0), row = a.k.size(1) * a.k.size(2);
  const int64_t slots = a.k_cache.size(0) * a.k_cache.size(1);
  const bool bf16 = a.k_cache.dtype() == DType::BF16;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = a.meta->slot_mapping.data<int32_t>()[i];
    if (slot < 0 || slot >= slots) continue;  // -1: padding row of a graph bucket
    for (int64_t c = 0; c < row; ++c) {
      const float k = a.k.data<float>()[i * row + c], v = a.v.data<float>()[i * row + c];
      if (bf16) {
        a.k_cache.data<uint16_t>()[slot * row + c] = f32_to_bf16(k);
        a.v_cache.data<uint16_t>()[slot * row + c] = f32_to_bf16(v);
      } else {
        a.k_cache.data<float>()[slot * row + c] = k;
        a.v_cache.data<float>()[slot * row + c] = v;
      }
    }
  }
}

void register_fill_kv_cache(Registry& reg) {
  reg.add<OpType::FillKvCache>(kReferenceVendor, DType::F32, fill_kv_cache, "reference::fill_kv_cache");
  reg.add<OpType::FillKvCache>(kReferenceVendor, DType::BF16, fill_kv_cache, "reference::fill_kv_cache");
}

}  // namespace opchain::reference
