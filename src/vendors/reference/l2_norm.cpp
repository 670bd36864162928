#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

// transformers' l2norm (fla): x * rsqrt(sum(x^2) + eps) per head.
static void l2_norm(const L2NormArgs& a) {
  const int64_t n = a.x.size(0), w = a.x.size(1), d = a.head_dim;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < a.heads; ++j) {
      float* x = a.x.data<float>() + t * w + j * d;
      float ss = 0.0f;
      for (int64_t c = 0; c < d; ++c) ss += x[c] * x[c];
      const float inv = 1.0f / std::sqrt(ss + a.eps);
      for (int64_t c = 0; c < d; ++c) x[c] *= inv;
    }
  }
}

void register_l2_norm(Registry& reg) {
  reg.add<OpType::L2Norm>(kReferenceVendor, DType::F32, l2_norm, "reference::l2_norm");
}

}  // namespace opchain::reference
