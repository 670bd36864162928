#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void silu_and_mul(const SiluAndMulArgs& a) { silu_and_mul_rows(a.x, a.out); }

void register_silu_and_mul(Registry& reg) {
  reg.add<OpType::SiluAndMul>(kReferenceVendor, DType::F32, silu_and_mul, "reference::silu_and_mul");
}

}  // namespace opchain::reference
