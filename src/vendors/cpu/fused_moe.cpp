#include "ops/matmul_precision.h"
#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/gemm.h"

namespace opchain::cpu {

// The cpu vendor's own step kernels that fused_moe chains (defined in their files).
void moe_init_routing(const MoeInitRoutingArgs& a);
void grouped_matmul(const GroupedMatmulArgs& a);
void swiglu(const SwigluArgs& a);
void moe_token_unpermute(const MoeTokenUnpermuteArgs& a);

namespace {

// Note [fused_moe sub-kernels]: the steps are this vendor's own functions, bound to entries that live
// for the whole process (named exactly as register_cpu_kernels names them), so fused_moe needs no
// registry at run time and cannot outlive one. Launching them through opchain::launch makes an active
// Tracer record them nested under fused_moe (depth + 1).
template <OpType Op>
Kernel<Op> bind(KernelEntry& slot, typename OpTraits<Op>::Fn fn, DType t) {
  slot = KernelEntry{Op, kCpuVendor, t, kernel_name(Op, t), reinterpret_cast<void (*)()>(fn), KernelFlags{}, {}};
  return Kernel<Op>{fn, &slot};
}

struct SubKernels {
  SubKernels() {  // built in place (the Kernels point into `entries`), once: see sub_kernels()
    route = bind<OpType::MoeInitRouting>(entries[0], moe_init_routing, DType::F32);
    gmm[0] = bind<OpType::GroupedMatmul>(entries[1], grouped_matmul, DType::F32);
    gmm[1] = bind<OpType::GroupedMatmul>(entries[2], grouped_matmul, DType::BF16);
    gmm[2] = bind<OpType::GroupedMatmul>(entries[3], grouped_matmul, DType::F16);
    gmm[3] = bind<OpType::GroupedMatmul>(entries[6], grouped_matmul, DType::U8);
    gmm[4] = bind<OpType::GroupedMatmul>(entries[7], grouped_matmul, DType::I8);
    gmm[5] = bind<OpType::GroupedMatmul>(entries[8], grouped_matmul, DType::F8E4M3);
    act = bind<OpType::Swiglu>(entries[4], swiglu, DType::F32);
    unpermute = bind<OpType::MoeTokenUnpermute>(entries[5], moe_token_unpermute, DType::F32);
  }
  SubKernels(const SubKernels&) = delete;
  SubKernels& operator=(const SubKernels&) = delete;

  KernelEntry entries[9];
  Kernel<OpType::MoeInitRouting> route;
  Kernel<OpType::GroupedMatmul> gmm[6];  // by weight dtype: f32, bf16, f16, u8, i8, f8e4m3

  const Kernel<OpType::GroupedMatmul>& for_dtype(DType t) const {
    switch (t) {
      case DType::BF16:
        return gmm[1];
      case DType::F16:
        return gmm[2];
      case DType::U8:
        return gmm[3];
      case DType::I8:
        return gmm[4];
      case DType::F8E4M3:
        return gmm[5];
      default:
        return gmm[0];
    }
  }
  Kernel<OpType::Swiglu> act;
  Kernel<OpType::MoeTokenUnpermute> unpermute;
};

const SubKernels& sub_kernels() {
  static const SubKernels subs;
  return subs;
}

}  // namespace

// moe_init_routing -> grouped_matmul(gate -> cols [0, I)) -> grouped_matmul(up -> cols [I, 2I)) ->
// swiglu -> grouped_matmul(down) -> moe_token_unpermute. Inactive rows route nowhere, so unpermute
// leaves them zero. Scratch is thread_local and only grows: no allocation per call after warm-up.
static void fused_moe(const FusedMoeArgs& a) {
  const SubKernels& sk = sub_kernels();
  const ExpertWeights& w = *a.experts;
  const int64_t n = a.hidden.size(0), h = a.hidden.size(1), k = a.topk_ids.size(1);
  const int64_t experts = w.num_experts(), inter = w.intermediate(), pairs = n * k;
  thread_local std::vector<float> rounded_buf, sorted_buf, gate_up_buf, act_buf, down_buf;
  thread_local std::vector<int32_t> offsets_buf, where_buf;
  auto f32 = [](std::vector<float>& buf, int64_t rows, int64_t cols) {
    return Tensor::view(scratch(buf, static_cast<size_t>(std::max<int64_t>(rows * cols, 1))), DType::F32, {rows, cols});
  };
  const Tensor x_sorted = f32(sorted_buf, pairs, h);
  const Tensor offsets =
      Tensor::view(scratch(offsets_buf, static_cast<size_t>(experts + 1)), DType::I32, {experts + 1});
  const Tensor where =
      Tensor::view(scratch(where_buf, static_cast<size_t>(std::max<int64_t>(pairs, 1))), DType::I32, {pairs});

  // Note [fused_moe rounds once]: where gemm() rounds bf16 activations itself (no bf16 dot
  // instruction), gate and up would each round all n * k gathered rows, k copies of every token. The n
  // token rows are rounded once here instead, before the gather; gate and up then run at f32 precision
  // on rows that are already exact bf16 values: the same products and sums, so the same bits (their
  // trace entries say precision=f32). Zen 3, 2 threads, 512-token prefills of the 4-layer 30B-A3B
  // alternated in one process: +2.5% median, faster in 11 of 16 pairs.
  const bool round_once = w.dtype() == DType::BF16 && rounds_activations_to_bf16(a.precision, DType::BF16) &&
                          gemm_rounds_bf16_activations();
  Tensor hidden = a.hidden;
  if (round_once) {
    hidden = f32(rounded_buf, n, h);
    round_rows_to_bf16(a.hidden.data<float>(), h, n, h, hidden.data<float>());
  }
  const MatmulPrecision gate_up_precision = round_once ? MatmulPrecision::F32 : a.precision;
  const MoeInitRoutingArgs route{hidden, a.topk_ids, experts, a.meta, x_sorted, offsets, where};
  launch(sk.route, route);                                  // traced from the op's field list, like every launch
  const int64_t routed = offsets.data<int32_t>()[experts];  // rows past this were not routed

  const Tensor xs = x_sorted.slice_rows(0, routed);
  const Tensor gate_up = f32(gate_up_buf, routed, 2 * inter);
  const Tensor act = f32(act_buf, routed, inter);
  const Tensor down = f32(down_buf, routed, h);
  const Kernel<OpType::GroupedMatmul>& gmm = sk.for_dtype(w.dtype());
  const auto* gate_q = w.quantized() ? &w.gate_q : nullptr;  // Note [Quantised weights]
  const GroupedMatmulArgs gate{xs, offsets, &w.gate, gate_up, 0, gate_up_precision, gate_q};
  launch(gmm, gate);
  const GroupedMatmulArgs up{xs, offsets, &w.up, gate_up, inter, gate_up_precision, w.quantized() ? &w.up_q : nullptr};
  launch(gmm, up);
  const SwigluArgs swiglu_args{gate_up, act};
  launch(sk.act, swiglu_args);
  const GroupedMatmulArgs down_args{act, offsets, &w.down, down, 0, a.precision, w.quantized() ? &w.down_q : nullptr};
  launch(gmm, down_args);
  const MoeTokenUnpermuteArgs unpermute{down, where, a.topk_weights, a.out};
  launch(sk.unpermute, unpermute);
}

void register_fused_moe(Registry& reg) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::U8, DType::I8, DType::F8E4M3})
    add_kernel<OpType::FusedMoe>(reg, t, fused_moe);
}

}  // namespace opchain::cpu
