#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void add_rms_norm(const AddRmsNormArgs& a) {
  const int64_t h = a.weight.size(0), rows = a.x.numel() / h;
  for (int64_t r = 0; r < rows; ++r) {
    float* res = a.residual.data<float>() + r * h;
    const float* x = a.x.data<float>() + r * h;
    for (int64_t c = 0; c < h; ++c) res[c] += x[c];
    rms_norm_row(res, a.weight, a.eps, h, a.out.data<float>() + r * h);
  }
}

void register_add_rms_norm(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    reg.add<OpType::AddRmsNorm>(kReferenceVendor, t, add_rms_norm, "reference::add_rms_norm");
}

}  // namespace opchain::reference
