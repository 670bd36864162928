#include "nn/linear.h"

namespace opchain::nn {

Linear::Linear(const ModuleContext& mc, Weight weight, Tensor bias)
    : weight_(std::move(weight)),
      bias_(std::move(bias)),
      precision_(mc.matmul_precision()),
      impl_(build_impl<OpType::Linear>(mc, "Linear", weight_.dtype())) {}

Tensor Linear::forward(StepContext& ctx, const Tensor& x) const {
  const int64_t rows = x.numel() / x.size(-1);
  Tensor out = ctx.workspace->alloc(DType::F32, {rows, weight_.rows()});
  (*impl_)(LinearArgs{x.reshape({rows, x.size(-1)}), weight_.values, bias_, out, precision_, weight_.quant.get()});
  return out;
}

}  // namespace opchain::nn
