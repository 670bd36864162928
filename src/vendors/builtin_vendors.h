#pragma once
// The vendors compiled into this build, registered in a fixed order by explicit calls.
#include <string>
#include <vector>

#include "ops/registry.h"

namespace opchain {

// Registers every built-in vendor into `reg`.
void register_builtin_vendors(Registry& reg);
// A process-wide registry holding the built-in vendors (registered once, on first use).
Registry& builtin_registry();

}  // namespace opchain
