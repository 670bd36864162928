#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

// Where one (sequence, value head) work item reads and writes; the state is [dk, dv] row-major.
struct HeadItem {
  int64_t start, len, h, kh;
  bool has_past;
  float* slot_state;  // null: a padding sequence
};

struct Dims {
  int64_t nk, nv, dk, dv, width;
  float scale;
};

// The cpu kernel's own chunk: the chunked form costs 3 C d^2 + 2 C^2 d multiply-adds per C tokens
// against the walk's 4 C d^2, so chunks shorter than the reference's 64 do less work on a CPU, which
// has no use for the parallelism of long ones; the function is the same (Note [Delta rule forms]).
// 512 tokens x 32 heads of 128 on 2 Zen 4 threads: C 64 21.4 ms, 32 15.5 ms, 16 14.1 ms; the walk 17.2 ms.
constexpr int64_t kCpuChunk = 16;

// Per-thread scratch of one work item, grown once and reused (Note [cpu kernels]: no allocation
// once warm).
struct Scratch {
  std::vector<float> q, k, kk, qk, ks, qs, d, wkt, coef;
  std::vector<const float*> ptrs;
  std::vector<float*> out_rows;
};

// Token by token (the decode form): SimdKernels::delta_rule_step on the [dk, dv] state, two passes
// over each block of columns while it sits in L1.
void walk(const GatedDeltaRuleArgs& a, const Dims& dm, const HeadItem& it, float* s, Scratch& sc) {
  const SimdKernels& sk = simd();
  float* q = scratch(sc.q, static_cast<size_t>(dm.dk));
  for (int64_t i = 0; i < it.len; ++i) {
    const int64_t t = it.start + i;
    const float* row = a.qkv.data<float>() + t * dm.width;
    const float* qi = row + it.kh * dm.dk;
    for (int64_t r = 0; r < dm.dk; ++r) q[r] = qi[r] * dm.scale;
    sk.delta_rule_step(s, dm.dk, dm.dv, row + (dm.nk + it.kh) * dm.dk, row + 2 * dm.nk * dm.dk + it.h * dm.dv, q,
                       std::exp(a.g.data<float>()[t * dm.nv + it.h]), a.beta.data<float>()[t * dm.nv + it.h],
                       a.out.data<float>() + (t * dm.nv + it.h) * dm.dv);
  }
}

// Blocks of kCpuChunk tokens (the reference's chunked() states the algebra) on the [dk, dv]
// state S. The chunk's products are register-blocked: K K^T and Q K^T as dot blocks, and every
// product with rows of dv (K S0, Q S0, the outputs' sum over the chunk's writes, the state update
// (w K)^T D) as axpy_rows, which shares each loaded row of S or D between 4 output rows; only the
// forward substitution for the writes d, row after row, is a plain multi-axpy.
void chunked(const GatedDeltaRuleArgs& a, const Dims& dm, const HeadItem& it, float* s, Scratch& sc) {
  const SimdKernels& sk = simd();
  const int64_t dk = dm.dk, dv = dm.dv, C = kCpuChunk;
  float* q = scratch(sc.q, static_cast<size_t>(C * dk));
  float* k = scratch(sc.k, static_cast<size_t>(C * dk));
  float* kk = scratch(sc.kk, static_cast<size_t>(C * C));
  float* qk = scratch(sc.qk, static_cast<size_t>(C * C));
  float* ks = scratch(sc.ks, static_cast<size_t>(C * dv));
  float* qs = scratch(sc.qs, static_cast<size_t>(C * dv));
  float* d = scratch(sc.d, static_cast<size_t>(C * dv));
  float* wkt = scratch(sc.wkt, static_cast<size_t>(dk * C));
  float* coef = scratch(sc.coef, static_cast<size_t>(3 * C + 2 * C * C));
  float* cum = coef + C;
  float* neg_cum = cum + C;
  float* decay = neg_cum + C;  // [C, C], row i: e^(G_i - G_j) for j <= i, 0 above
  float* mix = decay + C * C;  // [C, C], row i: e^(G_i - G_j) (q_i . k_j) for j <= i, 0 above
  const float** ptrs = scratch(sc.ptrs, static_cast<size_t>(3 * C + dk));
  const float** rows_k = ptrs;          // the chunk's k rows
  const float** rows_q = ptrs + C;      // its q rows
  const float** rows_d = ptrs + 2 * C;  // its delta-rule writes
  const float** rows_s = ptrs + 3 * C;  // the state's rows
  float** out_rows = scratch(sc.out_rows, static_cast<size_t>(std::max(C, dk)));
  for (int64_t i = 0; i < C; ++i) {
    rows_k[i] = k + i * dk;
    rows_q[i] = q + i * dk;
    rows_d[i] = d + i * dv;
  }
  for (int64_t r = 0; r < dk; ++r) rows_s[r] = s + r * dv;
  // y[0..rows) (rows of width dv starting at base) += a[rows, n] @ x[n rows of dv], 4 rows per pass.
  auto gemm_rows = [&](float* base, int64_t rows, const float* coefs, int64_t lda, const float* const* x, int64_t n) {
    for (int64_t i = 0; i < rows; ++i) out_rows[i] = base + i * dv;
    sk.axpy_rows(out_rows, rows, coefs, lda, x, n, dv);
  };
  for (int64_t c0 = 0; c0 < it.len; c0 += C) {
    const int64_t n = std::min(C, it.len - c0);
    float g_acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      const float* row = a.qkv.data<float>() + t * dm.width;
      for (int64_t r = 0; r < dk; ++r) q[i * dk + r] = row[it.kh * dk + r] * dm.scale;
      std::copy(row + (dm.nk + it.kh) * dk, row + (dm.nk + it.kh + 1) * dk, k + i * dk);
      cum[i] = g_acc += a.g.data<float>()[t * dm.nv + it.h];
    }
    sk.dot_block(rows_k, n, rows_k, n, dk, kk, C);
    sk.dot_block(rows_q, n, rows_k, n, dk, qk, C);
    std::fill(ks, ks + n * dv, 0.0f);
    std::fill(qs, qs + n * dv, 0.0f);
    gemm_rows(ks, n, k, dk, rows_s, dk);  // K S0
    gemm_rows(qs, n, q, dk, rows_s, dk);  // Q S0
    // The decays e^(G_i - G_j), j <= i, a row at a time: exp(s_j - m) with s_j = -G_j <= m = -G_i,
    // since the cumulative log-decay never rises; zero above the diagonal.
    for (int64_t j = 0; j < n; ++j) neg_cum[j] = -cum[j];
    for (int64_t i = 0; i < n; ++i) {
      sk.exp_shifted(neg_cum, -cum[i], decay + i * C, i + 1);
      for (int64_t j = 0; j <= i; ++j) mix[i * C + j] = decay[i * C + j] * qk[i * C + j];
      std::fill(mix + i * C + i + 1, mix + i * C + n, 0.0f);
    }
    // d_i = beta_i (v_i - e^G_i S0^T k_i) - sum_{j<i} beta_i e^(G_i-G_j) (k_i.k_j) d_j, row after row.
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      const float beta = a.beta.data<float>()[t * dm.nv + it.h], e = std::exp(cum[i]);
      const float* v = a.qkv.data<float>() + t * dm.width + 2 * dm.nk * dk + it.h * dv;
      float* di = d + i * dv;
      for (int64_t c = 0; c < dv; ++c) di[c] = beta * (v[c] - e * ks[i * dv + c]);
      for (int64_t j = 0; j < i; ++j) coef[j] = -(beta * decay[i * C + j] * kk[i * C + j]);
      sk.axpy_multi(di, coef, rows_d, i, dv);
    }
    // o_i = e^G_i S0^T q_i + sum_{j<=i} e^(G_i-G_j) (q_i.k_j) d_j
    float* o0 = a.out.data<float>() + ((it.start + c0) * dm.nv + it.h) * dv;
    for (int64_t i = 0; i < n; ++i) {
      const float e = std::exp(cum[i]);
      for (int64_t c = 0; c < dv; ++c) o0[i * dm.nv * dv + c] = e * qs[i * dv + c];
      out_rows[i] = o0 + i * dm.nv * dv;
    }
    sk.axpy_rows(out_rows, n, mix, C, rows_d, n, dv);
    // S = e^G_last S0 + (w K)^T D, w_j = e^(G_last - G_j): row r of S takes coefficients w_j k_j[r].
    const float last = cum[n - 1];
    for (int64_t j = 0; j < n; ++j) {
      const float w = std::exp(last - cum[j]);
      for (int64_t r = 0; r < dk; ++r) wkt[r * C + j] = w * k[j * dk + r];
    }
    sk.scale(s, std::exp(last), dk * dv);
    gemm_rows(s, dk, wkt, C, rows_d, n);
  }
}

}  // namespace

static void gated_delta_rule(const GatedDeltaRuleArgs& a) {
  const AttnMetadata& m = *a.meta;
  const Dims dm{a.num_k_heads, a.state.size(1), a.state.size(2), a.state.size(3), a.qkv.size(1), a.scale};
  const int64_t group = dm.nv / dm.nk;
  thread_local std::vector<HeadItem> items_buf;  // the caller's: workers reach it through `items`
  std::vector<HeadItem>& items = items_buf;
  items.clear();
  int64_t total = 0;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    const bool has_past = m.kv_seqlens.data<int32_t>()[b] > len;
    const int32_t slot = m.state_slots.data<int32_t>()[b];
    for (int64_t h = 0; h < dm.nv; ++h) {
      float* st = slot < 0 ? nullptr : a.state.data<float>() + (static_cast<int64_t>(slot) * dm.nv + h) * dm.dk * dm.dv;
      items.push_back({start, len, h, h / group, has_past, st});
      total += len * 4 * dm.dk * dm.dv;
    }
  }
  parallel_dynamic(items.size(), total, [&](size_t i) {
    const HeadItem& it = items[i];
    if (!it.slot_state) {
      for (int64_t t = it.start; t < it.start + it.len; ++t) {
        float* o = a.out.data<float>() + (t * dm.nv + it.h) * dm.dv;
        std::fill(o, o + dm.dv, 0.0f);
      }
      return;
    }
    thread_local Scratch sc;
    // The slot's [dk, dv] state, updated in place; a fresh sequence starts from zeros.
    if (!it.has_past) std::fill(it.slot_state, it.slot_state + dm.dk * dm.dv, 0.0f);
    if (a.form == DeltaRuleForm::Recurrent || it.len == 1)
      walk(a, dm, it, it.slot_state, sc);
    else
      chunked(a, dm, it, it.slot_state, sc);
  });
}

void register_gated_delta_rule(Registry& reg) { add_kernel<OpType::GatedDeltaRule>(reg, DType::F32, gated_delta_rule); }

}  // namespace opchain::cpu
