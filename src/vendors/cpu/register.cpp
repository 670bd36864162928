#include "vendors/cpu/cpu_common.h"

namespace opchain {

// Every op key, in op-table order, each from its own file (src/vendors/cpu/<key>.cpp).
void register_cpu_kernels(Registry& reg) {
#define OPCHAIN_X(name, key, args, dispatch, schema, tol) cpu::register_##key(reg);
  OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
}

}  // namespace opchain
