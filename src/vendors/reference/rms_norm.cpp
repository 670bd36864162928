#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void rms_norm(const RmsNormArgs& a) {
  const int64_t h = a.weight.size(0), rows = a.x.numel() / h;
  for (int64_t r = 0; r < rows; ++r)
    rms_norm_row(a.x.data<float>() + r * h, a.weight, a.eps, h, a.out.data<float>() + r * h);
}

void register_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::RmsNorm>(kReferenceVendor, t, rms_norm, "reference::rms_norm");
}

}  // namespace opchain::reference
