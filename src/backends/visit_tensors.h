#pragma once
// Names every tensor of an op's arguments, so an observer of a launch (LaunchObserver) can read
// them: `opchain align` snapshots outputs and summarises inputs. Generic over the op's field list
// (visit_field_tensors, Note [Op fields]): is_output marks what the kernel writes, in-place operands
// included (the `!` and `->` parts of the op's schema); tensors of the step metadata the op reads are
// inputs named "meta.<field>".
#include "ops/op_fields.h"
#include "ops/op_table.h"

namespace opchain {

template <class Args>
void visit_tensors(const Args& a, const TensorVisitor& fn) {
  visit_field_tensors(a, fn);
}

// `args` points at an OpTraits<op>::Args, as a LaunchObserver or LaunchRecorder receives it.
void visit_tensors(OpType op, const void* args, const TensorVisitor& fn);

}  // namespace opchain
