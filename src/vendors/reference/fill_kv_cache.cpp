#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void fill_kv_cache(const FillKvCacheArgs& a) {
  const int64_t n = a.k.size(0), row = a.k.size(1) * a.k.size(2);
  const int64_t slots = a.k_cache.size(0) * a.k_cache.size(1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = a.meta->slot_mapping.data<int32_t>()[i];
    if (slot < 0 || slot >= slots) continue;  // -1: padding row of a graph bucket
    for (int64_t c = 0; c < row; ++c) {
      a.k_cache.data<float>()[slot * row + c] = a.k.data<float>()[i * row + c];
      a.v_cache.data<float>()[slot * row + c] = a.v.data<float>()[i * row + c];
    }
  }
}

void register_fill_kv_cache(Registry& reg) {
  reg.add<OpType::FillKvCache>(kReferenceVendor, DType::F32, fill_kv_cache, "reference::fill_kv_cache");
}

}  // namespace opchain::reference
