#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/gemm.h"

namespace opchain::cpu {

// out = x @ weight^T + bias over all leading dims of x; see gemm.h for the split.
static void linear(const LinearArgs& a) {
  const int64_t in = a.weight.size(1), rows = in ? a.x.numel() / in : 0;
  GemmProblem p;
  p.x = a.x.data<float>();
  p.ldx = in;
  p.rows = rows;
  p.w = a.weight.raw();
  p.wdtype = a.weight.dtype();
  p.n = a.weight.size(0);
  p.k = in;
  p.out = a.out.data<float>();
  p.ldo = p.n;
  p.bf16_activations = rounds_activations_to_bf16(a.precision, p.wdtype);
  if (!a.bias.is_null()) {
    p.bias = a.bias.raw();
    p.bias_dtype = a.bias.dtype();
  }
  gemm(&p, 1);
}

void register_linear(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) add_kernel<OpType::Linear>(reg, t, linear);
}

}  // namespace opchain::cpu
