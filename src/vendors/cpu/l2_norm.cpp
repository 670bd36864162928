#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

static void l2_norm(const L2NormArgs& a) {
  const SimdKernels& sk = simd();
  const int64_t n = a.x.size(0), w = a.x.size(1), d = a.head_dim;
  parallel_rows(n, 2 * a.heads * d, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      for (int64_t j = 0; j < a.heads; ++j) {
        float* x = a.x.data<float>() + t * w + j * d;
        sk.scale(x, 1.0f / std::sqrt(sk.dot(x, x, d) + a.eps), d);
      }
    }
  });
}

void register_l2_norm(Registry& reg) { add_kernel<OpType::L2Norm>(reg, DType::F32, l2_norm); }

}  // namespace opchain::cpu
