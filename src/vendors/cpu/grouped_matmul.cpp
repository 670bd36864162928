#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/gemm.h"
#include "vendors/cpu/quant_gemm.h"

namespace opchain::cpu {

// One gemm problem per expert with rows; experts without rows cost nothing. The whole call is one
// parallel region, so small experts (decode) split over output features and large ones into tiles.
void grouped_matmul(const GroupedMatmulArgs& a) {
  const std::vector<Tensor>& w = *a.weights;
  const int64_t experts = a.expert_offsets.numel() - 1, kin = a.x.size(1), ld = a.out.size(1);
  const int32_t* off = a.expert_offsets.data<int32_t>();
  if (a.quant) {  // Note [Quantised weights]
    thread_local std::vector<QuantGemmProblem> qproblems;
    qproblems.clear();
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t r0 = off[e], r1 = off[e + 1];
      if (r1 <= r0) continue;
      QuantGemmProblem p;
      p.x = a.x.data<float>() + r0 * kin;
      p.ldx = kin;
      p.rows = r1 - r0;
      p.codes = &w[static_cast<size_t>(e)];
      p.q = (*a.quant)[static_cast<size_t>(e)].get();
      p.n = p.codes->size(0);
      p.out = a.out.data<float>() + r0 * ld + a.out_col_offset;
      p.ldo = ld;
      qproblems.push_back(p);
    }
    quant_gemm(qproblems.data(), qproblems.size(), a.precision);
    return;
  }
  thread_local std::vector<GemmProblem> problems;
  problems.clear();
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t r0 = off[e], r1 = off[e + 1];
    if (r1 <= r0) continue;
    const Tensor& we = w[static_cast<size_t>(e)];
    GemmProblem p;
    p.x = a.x.data<float>() + r0 * kin;
    p.ldx = kin;
    p.rows = r1 - r0;
    p.w = we.raw();
    p.wdtype = we.dtype();
    p.n = we.size(0);
    p.k = kin;
    p.out = a.out.data<float>() + r0 * ld + a.out_col_offset;
    p.ldo = ld;
    p.bf16_activations = rounds_activations_to_bf16(a.precision, p.wdtype);
    problems.push_back(p);
  }
  gemm(problems.data(), problems.size());
}

void register_grouped_matmul(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    add_kernel<OpType::GroupedMatmul>(reg, t, grouped_matmul);
}

}  // namespace opchain::cpu
