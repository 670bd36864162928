#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void moe_init_routing(const MoeInitRoutingArgs& a) {
  const int64_t n = a.topk_ids.size(0), k = a.topk_ids.size(1), h = a.x.size(1);
  const int32_t* ids = a.topk_ids.data<int32_t>();
  int32_t* offsets = a.expert_offsets.data<int32_t>();
  int32_t* where = a.pair_to_sorted.data<int32_t>();
  auto active = [&](int64_t t) {
    return !a.meta || a.meta->x_active_mask.is_null() || a.meta->x_active_mask.data<uint8_t>()[t] != 0;
  };
  for (int64_t p = 0; p < n * k; ++p) where[p] = -1;
  int32_t row = 0;
  for (int64_t e = 0; e < a.num_experts; ++e) {
    offsets[e] = row;
    for (int64_t t = 0; t < n; ++t) {
      if (!active(t)) continue;
      for (int64_t j = 0; j < k; ++j) {
        if (ids[t * k + j] != e) continue;
        where[t * k + j] = row;
        for (int64_t c = 0; c < h; ++c) a.x_sorted.data<float>()[row * h + c] = a.x.data<float>()[t * h + c];
        ++row;
      }
    }
  }
  offsets[a.num_experts] = row;
}

void register_moe_init_routing(Registry& reg) {
  reg.add<OpType::MoeInitRouting>(kReferenceVendor, DType::F32, moe_init_routing, "reference::moe_init_routing");
}

}  // namespace opchain::reference
