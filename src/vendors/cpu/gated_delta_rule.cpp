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

// Per-thread scratch of one work item, grown once and reused (Note [cpu kernels]: no allocation
// once warm).
struct Scratch {
  std::vector<float> s, q, k, kk, qk, ks, qs, d, dt, wkt, upd, coef;
  std::vector<const float*> rows_d;
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

// out[r, c] = x[r] . w[c] over k, through the f32 GEMM tile (register-blocked, fixed reduction order).
void small_gemm(const SimdKernels& sk, const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t rows, int64_t cols,
                int64_t k, float* out, int64_t ldo) {
  GemmTile t;
  t.x = x;
  t.ldx = ldx;
  t.w = w;
  t.ldw = ldw;
  t.out = out;
  t.ldo = ldo;
  t.rows = rows;
  t.cols = cols;
  t.k = k;
  sk.gemm_f32(t);
}

// Blocks of kDeltaRuleChunk tokens (the reference's chunked() states the algebra). The state is held
// transposed, S^T [dv, dk], so that every product of the chunk is a GEMM tile: K K^T and Q K^T (the
// chunk's mixing), K S0 and Q S0 (what the incoming state predicts and returns), and the state update
// D^T (w K); the forward substitution for the writes d and the outputs are multi-axpys over rows of dv.
void chunked(const GatedDeltaRuleArgs& a, const Dims& dm, const HeadItem& it, float* st, Scratch& sc) {
  const SimdKernels& sk = simd();
  const int64_t dk = dm.dk, dv = dm.dv, C = kDeltaRuleChunk;
  float* q = scratch(sc.q, static_cast<size_t>(C * dk));
  float* k = scratch(sc.k, static_cast<size_t>(C * dk));
  float* kk = scratch(sc.kk, static_cast<size_t>(C * C));
  float* qk = scratch(sc.qk, static_cast<size_t>(C * C));
  float* ks = scratch(sc.ks, static_cast<size_t>(C * dv));
  float* qs = scratch(sc.qs, static_cast<size_t>(C * dv));
  float* d = scratch(sc.d, static_cast<size_t>(C * dv));
  float* dt = scratch(sc.dt, static_cast<size_t>(dv * C));
  float* wkt = scratch(sc.wkt, static_cast<size_t>(dk * C));
  float* upd = scratch(sc.upd, static_cast<size_t>(dv * dk));
  float* coef = scratch(sc.coef, static_cast<size_t>(2 * C));
  float* cum = coef + C;
  const float** rows_d = scratch(sc.rows_d, static_cast<size_t>(C));
  for (int64_t j = 0; j < C; ++j) rows_d[j] = d + j * dv;
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
    small_gemm(sk, k, dk, k, dk, n, n, dk, kk, C);
    small_gemm(sk, q, dk, k, dk, n, n, dk, qk, C);
    small_gemm(sk, k, dk, st, dk, n, dv, dk, ks, dv);
    small_gemm(sk, q, dk, st, dk, n, dv, dk, qs, dv);
    // d_i = beta_i (v_i - e^G_i S0^T k_i) - sum_{j<i} beta_i e^(G_i-G_j) (k_i.k_j) d_j
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      const float beta = a.beta.data<float>()[t * dm.nv + it.h], e = std::exp(cum[i]);
      const float* v = a.qkv.data<float>() + t * dm.width + 2 * dm.nk * dk + it.h * dv;
      float* di = d + i * dv;
      for (int64_t c = 0; c < dv; ++c) di[c] = beta * (v[c] - e * ks[i * dv + c]);
      for (int64_t j = 0; j < i; ++j) coef[j] = -(beta * std::exp(cum[i] - cum[j]) * kk[i * C + j]);
      sk.axpy_multi(di, coef, rows_d, i, dv);
    }
    // o_i = e^G_i S0^T q_i + sum_{j<=i} e^(G_i-G_j) (q_i.k_j) d_j
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      float* o = a.out.data<float>() + (t * dm.nv + it.h) * dv;
      const float e = std::exp(cum[i]);
      for (int64_t c = 0; c < dv; ++c) o[c] = e * qs[i * dv + c];
      for (int64_t j = 0; j <= i; ++j) coef[j] = std::exp(cum[i] - cum[j]) * qk[i * C + j];
      sk.axpy_multi(o, coef, rows_d, i + 1, dv);
    }
    // S^T = e^G_last S0^T + D^T (w K), w_j = e^(G_last - G_j): one tile over the chunk's n tokens.
    const float last = cum[n - 1];
    for (int64_t j = 0; j < n; ++j) {
      const float w = std::exp(last - cum[j]);
      for (int64_t r = 0; r < dk; ++r) wkt[r * C + j] = w * k[j * dk + r];
      for (int64_t c = 0; c < dv; ++c) dt[c * C + j] = d[j * dv + c];
    }
    small_gemm(sk, dt, C, wkt, C, dv, dk, n, upd, dk);
    const float e_last = std::exp(last);
    for (int64_t i = 0; i < dv * dk; ++i) st[i] = e_last * st[i] + upd[i];
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
    const int64_t dk = dm.dk, dv = dm.dv;
    if (a.form == DeltaRuleForm::Recurrent || it.len == 1) {  // the slot's [dk, dv] state, in place
      if (!it.has_past) std::fill(it.slot_state, it.slot_state + dk * dv, 0.0f);
      walk(a, dm, it, it.slot_state, sc);
      return;
    }
    float* st = scratch(sc.s, static_cast<size_t>(dk * dv));  // S^T
    for (int64_t r = 0; r < dk; ++r)
      for (int64_t c = 0; c < dv; ++c) st[c * dk + r] = it.has_past ? it.slot_state[r * dv + c] : 0.0f;
    chunked(a, dm, it, st, sc);
    for (int64_t r = 0; r < dk; ++r)
      for (int64_t c = 0; c < dv; ++c) it.slot_state[r * dv + c] = st[c * dk + r];
  });
}

void register_gated_delta_rule(Registry& reg) { add_kernel<OpType::GatedDeltaRule>(reg, DType::F32, gated_delta_rule); }

}  // namespace opchain::cpu
