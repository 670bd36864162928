#pragma once
// Layer 3: the impls a plugin vendor supplies through the vendor ABI (oc_impl_def, ABI 1.1), as impl
// builders of their OpTypes (Note [Impl builders] in backends/op_impl.h). A backend whose vendor has
// VendorInfo::plugin_impls uses these in place of its default impls, so nn asks for an impl exactly as
// for any vendor and never learns that a plugin made it.
//
// Note [Plugin impls]
// One plugin impl object per nn module: create(info) at model build makes the plugin's handle, run is
// called where the default impl would launch its kernel(s), destroy when the module goes. The fields
// are marshalled by CallMarshal (ops/abi_marshal.h) and the step's metadata is handed beside
// them as oc_step_info. A plugin impl is not a kernel launch, so a graph could not replay it: while a
// graph is being captured a plugin impl throws GraphCaptureError (run with --eager).
#include "backends/ops_backend.h"

namespace opchain {

struct PluginImplSet;
// Sets the builder of every OpType the plugin supplies an impl for.
void add_plugin_impl_builders(const PluginImplSet& impls, ImplBuilderTable& table);

}  // namespace opchain
