#include "vendors/builtin_vendors.h"

#include <mutex>

#include "vendors/cpu/cpu_kernels.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain {

void register_builtin_vendors(Registry& reg) {
  register_reference_kernels(reg);
  register_cpu_kernels(reg);
}

Registry& builtin_registry() {
  static Registry reg;
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_vendors(reg); });
  return reg;
}

}  // namespace opchain
