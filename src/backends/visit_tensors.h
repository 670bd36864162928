#pragma once
// Names every tensor of an op's arguments, so an observer of a launch (LaunchObserver) can read
// them: `opchain align` snapshots outputs and summarises inputs. is_output marks what the kernel
// writes, in-place operands included (the `!` and `->` parts of the op's schema); tensors of the
// step metadata the op reads are inputs named "meta.<field>".
#include <functional>

#include "backends/op_impl.h"

namespace opchain {

using TensorVisitor = std::function<void(const char* name, const Tensor& t, bool is_output)>;

#define OPCHAIN_X(name, key, args, dispatch, schema, tol) void visit_tensors(const args& a, const TensorVisitor& fn);
OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X

// `args` points at an OpTraits<op>::Args, as a LaunchObserver or LaunchRecorder receives it.
void visit_tensors(OpType op, const void* args, const TensorVisitor& fn);

}  // namespace opchain
