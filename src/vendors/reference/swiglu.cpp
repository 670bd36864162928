#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

static void swiglu(const SwigluArgs& a) { silu_and_mul_rows(a.x, a.out); }

void register_swiglu(Registry& reg) {
  reg.add<OpType::Swiglu>(kReferenceVendor, DType::F32, swiglu, "reference::swiglu");
}

}  // namespace opchain::reference
