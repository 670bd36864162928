#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

void silu_mul_row(const float* in, int64_t i, float* out) { simd().silu_mul(in, in + i, out, i); }

// out = silu(x[:, :i]) * x[:, i:]
static void silu_and_mul(const SiluAndMulArgs& a) {
  const int64_t i = a.out.size(-1), rows = i ? a.out.numel() / i : 0;
  parallel_rows(rows, 8 * i, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) silu_mul_row(a.x.data<float>() + r * 2 * i, i, a.out.data<float>() + r * i);
  });
}

void register_silu_and_mul(Registry& reg) { add_kernel<OpType::SiluAndMul>(reg, DType::F32, silu_and_mul); }

}  // namespace opchain::cpu
