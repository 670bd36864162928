#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

// The MoE activation on expert-sorted rows: out = silu(x[:, :i]) * x[:, i:].
void swiglu(const SwigluArgs& a) {
  const int64_t i = a.out.size(-1), rows = i ? a.out.numel() / i : 0;
  parallel_rows(rows, 8 * i, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) silu_mul_row(a.x.data<float>() + r * 2 * i, i, a.out.data<float>() + r * i);
  });
}

void register_swiglu(Registry& reg) { add_kernel<OpType::Swiglu>(reg, DType::F32, swiglu); }

}  // namespace opchain::cpu
