#include "nn/l2_norm.h"

namespace opchain::nn {

L2Norm::L2Norm(const ModuleContext& mc, int64_t heads, int64_t head_dim, float eps)
    : heads_(heads), head_dim_(head_dim), eps_(eps), impl_(build_impl<OpType::L2Norm>(mc, "L2Norm", DType::F32)) {}

void L2Norm::forward(const Tensor& x) const { (*impl_)(L2NormArgs{x, heads_, head_dim_, eps_}); }

}  // namespace opchain::nn
