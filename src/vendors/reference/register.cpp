#include "vendors/reference/reference_kernels.h"

namespace opchain {

void register_reference_kernels(Registry& reg) {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) reference::register_##key(reg);
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}

}  // namespace opchain
