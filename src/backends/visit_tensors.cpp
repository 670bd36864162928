#include "backends/visit_tensors.h"

namespace opchain {

void visit_tensors(OpType op, const void* args, const TensorVisitor& fn) {
  switch (op) {
#define OPCHAIN_X(name, key, args_t, dispatch, schema, tol)     \
  case OpType::name:                                            \
    visit_field_tensors(*static_cast<const args_t*>(args), fn); \
    return;
    OPCHAIN_OP_TABLE(OPCHAIN_X)
#undef OPCHAIN_X
  }
}

}  // namespace opchain
