#include "nn/gdn_gating.h"

namespace opchain::nn {

GdnGating::GdnGating(const ModuleContext& mc, Tensor a_log, Tensor dt_bias)
    : a_log_(std::move(a_log)),
      dt_bias_(std::move(dt_bias)),
      impl_(build_impl<OpType::GdnGating>(mc, "GdnGating", a_log_.dtype())) {}

GdnGating::Gates GdnGating::forward(StepContext& ctx, const Tensor& ba) const {
  const int64_t n = ba.size(0), nv = a_log_.numel();
  Gates out{ctx.workspace->alloc(DType::F32, {n, nv}), ctx.workspace->alloc(DType::F32, {n, nv})};
  (*impl_)(GdnGatingArgs{ba, a_log_, dt_bias_, out.g, out.beta});
  return out;
}

}  // namespace opchain::nn
