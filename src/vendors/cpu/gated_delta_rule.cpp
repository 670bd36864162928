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
  std::vector<float> s, u, q, k, kt, v, cum, kk, qk, d, coef;
  std::vector<const float*> rows_s, rows_d;
};

// Token by token: S *= e^g; u = S^T k; delta = beta (v - u); S += k delta^T; o = S^T (scale q).
void walk(const GatedDeltaRuleArgs& a, const Dims& dm, const HeadItem& it, float* s, Scratch& sc) {
  const SimdKernels& sk = simd();
  const int64_t dk = dm.dk, dv = dm.dv;
  float* u = scratch(sc.u, static_cast<size_t>(dv));
  float* q = scratch(sc.q, static_cast<size_t>(dk));
  const float** rows = scratch(sc.rows_s, static_cast<size_t>(dk));
  for (int64_t r = 0; r < dk; ++r) rows[r] = s + r * dv;
  for (int64_t i = 0; i < it.len; ++i) {
    const int64_t t = it.start + i;
    const float* row = a.qkv.data<float>() + t * dm.width;
    const float *qi = row + it.kh * dk, *ki = row + (dm.nk + it.kh) * dk, *vi = row + 2 * dm.nk * dk + it.h * dv;
    const float beta = a.beta.data<float>()[t * dm.nv + it.h];
    sk.scale(s, std::exp(a.g.data<float>()[t * dm.nv + it.h]), dk * dv);
    std::fill(u, u + dv, 0.0f);
    sk.axpy_multi(u, ki, rows, dk, dv);
    for (int64_t c = 0; c < dv; ++c) u[c] = (vi[c] - u[c]) * beta;  // now delta
    const float* delta = u;
    for (int64_t r = 0; r < dk; ++r) sk.axpy_multi(s + r * dv, ki + r, &delta, 1, dv);
    for (int64_t r = 0; r < dk; ++r) q[r] = qi[r] * dm.scale;
    float* o = a.out.data<float>() + (t * dm.nv + it.h) * dv;
    std::fill(o, o + dv, 0.0f);
    sk.axpy_multi(o, q, rows, dk, dv);
  }
}

// Blocks of kDeltaRuleChunk tokens (the reference's chunked() states the algebra): the chunk's
// products K K^T and Q K^T, then forward substitution for the writes d, the outputs and the new state,
// each as fixed-order multi-axpys over rows of dv.
void chunked(const GatedDeltaRuleArgs& a, const Dims& dm, const HeadItem& it, float* s, Scratch& sc) {
  const SimdKernels& sk = simd();
  const int64_t dk = dm.dk, dv = dm.dv, C = kDeltaRuleChunk;
  float* q = scratch(sc.q, static_cast<size_t>(C * dk));
  float* k = scratch(sc.k, static_cast<size_t>(C * dk));
  float* kt = scratch(sc.kt, static_cast<size_t>(dk * C));
  float* cum = scratch(sc.cum, static_cast<size_t>(C));
  float* kk = scratch(sc.kk, static_cast<size_t>(C * C));
  float* qk = scratch(sc.qk, static_cast<size_t>(C * C));
  float* d = scratch(sc.d, static_cast<size_t>(C * dv));
  float* coef = scratch(sc.coef, static_cast<size_t>(C + dk));
  const float** rows_s = scratch(sc.rows_s, static_cast<size_t>(dk));
  const float** rows_d = scratch(sc.rows_d, static_cast<size_t>(C));
  for (int64_t r = 0; r < dk; ++r) rows_s[r] = s + r * dv;
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
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        kk[i * C + j] = sk.dot(k + i * dk, k + j * dk, dk);
        qk[i * C + j] = sk.dot(q + i * dk, k + j * dk, dk);
      }
    // d_i = beta_i (v_i - e^G_i S0^T k_i) - sum_{j<i} beta_i e^(G_i-G_j) (k_i.k_j) d_j
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      const float beta = a.beta.data<float>()[t * dm.nv + it.h], e = std::exp(cum[i]);
      const float* v = a.qkv.data<float>() + t * dm.width + 2 * dm.nk * dk + it.h * dv;
      float* di = d + i * dv;
      std::fill(di, di + dv, 0.0f);
      sk.axpy_multi(di, k + i * dk, rows_s, dk, dv);  // S0^T k_i
      for (int64_t c = 0; c < dv; ++c) di[c] = beta * (v[c] - e * di[c]);
      for (int64_t j = 0; j < i; ++j) coef[j] = -(beta * std::exp(cum[i] - cum[j]) * kk[i * C + j]);
      sk.axpy_multi(di, coef, rows_d, i, dv);
    }
    // o_i = e^G_i S0^T q_i + sum_{j<=i} e^(G_i-G_j) (q_i.k_j) d_j
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = it.start + c0 + i;
      float* o = a.out.data<float>() + (t * dm.nv + it.h) * dv;
      std::fill(o, o + dv, 0.0f);
      sk.axpy_multi(o, q + i * dk, rows_s, dk, dv);
      sk.scale(o, std::exp(cum[i]), dv);
      for (int64_t j = 0; j <= i; ++j) coef[j] = std::exp(cum[i] - cum[j]) * qk[i * C + j];
      sk.axpy_multi(o, coef, rows_d, i + 1, dv);
    }
    // S = e^G_last S0 + sum_j e^(G_last-G_j) k_j d_j^T, row r of S taking coefficients w_j k_j[r].
    const float last = cum[n - 1];
    for (int64_t j = 0; j < n; ++j) {
      const float w = std::exp(last - cum[j]);
      for (int64_t r = 0; r < dk; ++r) kt[r * C + j] = w * k[j * dk + r];
    }
    sk.scale(s, std::exp(last), dk * dv);
    for (int64_t r = 0; r < dk; ++r) sk.axpy_multi(s + r * dv, kt + r * C, rows_d, n, dv);
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
    float* s = scratch(sc.s, static_cast<size_t>(dm.dk * dm.dv));
    if (it.has_past) std::copy(it.slot_state, it.slot_state + dm.dk * dm.dv, s);
    else std::fill(s, s + dm.dk * dm.dv, 0.0f);
    if (a.form == DeltaRuleForm::Chunked && it.len > 1) chunked(a, dm, it, s, sc);
    else walk(a, dm, it, s, sc);
    std::copy(s, s + dm.dk * dm.dv, it.slot_state);
  });
}

void register_gated_delta_rule(Registry& reg) { add_kernel<OpType::GatedDeltaRule>(reg, DType::F32, gated_delta_rule); }

}  // namespace opchain::cpu
