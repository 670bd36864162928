#include "nn/linear.h"

namespace opchain::nn {

Linear::Linear(const ModuleContext& mc, Weight weight, Tensor bias, LinearParallel parallel)
    : weight_(std::move(weight)),
      bias_(std::move(bias)),
      precision_(mc.matmul_precision()),
      parallel_(parallel),
      impl_(build_impl<OpType::Linear>(mc, "Linear", weight_.dtype())) {
  if (parallel_.kind == LinearParallel::ReduceOutput)
    reduce_ = build_tp_collective(mc.backend(), TpCollective::AllReduce, impl_params(mc, "Linear", weight_.dtype()));
  if (parallel_.kind == LinearParallel::GatherOutputColumns)
    gather_ = build_tp_collective(mc.backend(), TpCollective::GatherColumns, impl_params(mc, "Linear", weight_.dtype()),
                                  parallel_.full_out);
}

Tensor Linear::forward(StepContext& ctx, const Tensor& x) const {
  const int64_t rows = x.numel() / x.size(-1);
  Tensor out = ctx.workspace->alloc(DType::F32, {rows, weight_.rows()});
  (*impl_)(LinearArgs{x.reshape({rows, x.size(-1)}), weight_.values, bias_, out, precision_, weight_.quant.get()});
  if (reduce_) reduce_->forward(out, out);
  if (!gather_) return out;
  Tensor full = ctx.workspace->alloc(DType::F32, {rows, parallel_.full_out});
  gather_->forward(out, full);
  return full;
}

}  // namespace opchain::nn
