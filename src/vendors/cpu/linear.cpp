#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/gemm.h"
#include "vendors/cpu/quant_gemm.h"

namespace opchain::cpu {

// out = x @ weight^T + bias over all leading dims of x; see gemm.h for the split (quant_gemm.h for
// quantised weights).
static void linear(const LinearArgs& a) {
  if (a.quant) {
    QuantGemmProblem p;
    p.q = a.quant;
    p.ldx = a.quant->in_features;
    p.rows = a.x.numel() / p.ldx;
    p.x = a.x.data<float>();
    p.codes = &a.weight;
    p.n = a.weight.size(0);
    p.out = a.out.data<float>();
    p.ldo = p.n;
    if (!a.bias.is_null()) {
      p.bias = a.bias.raw();
      p.bias_dtype = a.bias.dtype();
    }
    quant_gemm(&p, 1, a.precision);
    return;
  }
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
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    add_kernel<OpType::Linear>(reg, t, linear);
}

}  // namespace opchain::cpu
