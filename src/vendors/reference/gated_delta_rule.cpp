#include <algorithm>
#include <vector>

#include "vendors/reference/reference_kernels.h"

namespace opchain::reference {

namespace {

// One value head of one sequence: where its tokens' q, k, v, g and beta are.
struct HeadView {
  const GatedDeltaRuleArgs& a;
  int64_t start, h, kh, dk, dv, nk, nv, width;
  const float* q(int64_t i) const { return a.qkv.data<float>() + (start + i) * width + kh * dk; }
  const float* k(int64_t i) const { return a.qkv.data<float>() + (start + i) * width + (nk + kh) * dk; }
  const float* v(int64_t i) const { return a.qkv.data<float>() + (start + i) * width + 2 * nk * dk + h * dv; }
  float g(int64_t i) const { return a.g.data<float>()[(start + i) * nv + h]; }
  float beta(int64_t i) const { return a.beta.data<float>()[(start + i) * nv + h]; }
  float* out(int64_t i) const { return a.out.data<float>() + ((start + i) * nv + h) * dv; }
};

// The definition, token by token (S is [dk, dv], row-major).
void recurrent(const HeadView& hv, int64_t len, float scale, std::vector<float>& s) {
  const int64_t dk = hv.dk, dv = hv.dv;
  std::vector<float> delta(static_cast<size_t>(dv));
  for (int64_t i = 0; i < len; ++i) {
    const float decay = std::exp(hv.g(i)), beta = hv.beta(i);
    const float *q = hv.q(i), *k = hv.k(i), *v = hv.v(i);
    for (auto& x : s) x *= decay;
    for (int64_t c = 0; c < dv; ++c) {
      float u = 0.0f;
      for (int64_t r = 0; r < dk; ++r) u += s[static_cast<size_t>(r * dv + c)] * k[r];
      delta[static_cast<size_t>(c)] = (v[c] - u) * beta;
    }
    for (int64_t r = 0; r < dk; ++r)
      for (int64_t c = 0; c < dv; ++c) s[static_cast<size_t>(r * dv + c)] += k[r] * delta[static_cast<size_t>(c)];
    float* o = hv.out(i);
    for (int64_t c = 0; c < dv; ++c) {
      float acc = 0.0f;
      for (int64_t r = 0; r < dk; ++r) acc += s[static_cast<size_t>(r * dv + c)] * (q[r] * scale);
      o[c] = acc;
    }
  }
}

// The same function a chunk of C tokens at a time. With the chunk's incoming state S0 and its
// inclusive cumulative log-decay G (local to the chunk, so e^(G_i - G_j) <= 1 for j <= i):
//   d_i = beta_i (v_i - e^G_i S0^T k_i) - sum_{j<i} beta_i e^(G_i-G_j) (k_i.k_j) d_j   (forward substitution)
//   o_i = e^G_i S0^T q_i + sum_{j<=i} e^(G_i-G_j) (q_i.k_j) d_j
//   S   = e^G_last S0 + sum_j e^(G_last-G_j) k_j d_j^T
// d_j is the delta-rule write of token j, so this expands the recurrence exactly.
void chunked(const HeadView& hv, int64_t len, float scale, std::vector<float>& s) {
  const int64_t dk = hv.dk, dv = hv.dv;
  for (int64_t c0 = 0; c0 < len; c0 += kDeltaRuleChunk) {
    const int64_t n = std::min(kDeltaRuleChunk, len - c0);
    std::vector<float> cum(static_cast<size_t>(n)), d(static_cast<size_t>(n * dv)), o(static_cast<size_t>(dv));
    float acc_g = 0.0f;
    for (int64_t i = 0; i < n; ++i) cum[static_cast<size_t>(i)] = acc_g += hv.g(c0 + i);
    auto dot_k = [&](const float* x, const float* y) {
      float t = 0.0f;
      for (int64_t r = 0; r < dk; ++r) t += x[r] * y[r];
      return t;
    };
    for (int64_t i = 0; i < n; ++i) {
      const float *k = hv.k(c0 + i), *v = hv.v(c0 + i);
      const float beta = hv.beta(c0 + i), e = std::exp(cum[static_cast<size_t>(i)]);
      float* di = d.data() + i * dv;
      for (int64_t c = 0; c < dv; ++c) {
        float s0k = 0.0f;
        for (int64_t r = 0; r < dk; ++r) s0k += s[static_cast<size_t>(r * dv + c)] * k[r];
        di[c] = beta * (v[c] - e * s0k);
      }
      for (int64_t j = 0; j < i; ++j) {
        const float aij =
            beta * std::exp(cum[static_cast<size_t>(i)] - cum[static_cast<size_t>(j)]) * dot_k(k, hv.k(c0 + j));
        for (int64_t c = 0; c < dv; ++c) di[c] -= aij * d[static_cast<size_t>(j * dv + c)];
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      std::vector<float> q(static_cast<size_t>(dk));
      for (int64_t r = 0; r < dk; ++r) q[static_cast<size_t>(r)] = hv.q(c0 + i)[r] * scale;
      const float e = std::exp(cum[static_cast<size_t>(i)]);
      for (int64_t c = 0; c < dv; ++c) {
        float s0q = 0.0f;
        for (int64_t r = 0; r < dk; ++r) s0q += s[static_cast<size_t>(r * dv + c)] * q[static_cast<size_t>(r)];
        o[static_cast<size_t>(c)] = e * s0q;
      }
      for (int64_t j = 0; j <= i; ++j) {
        const float w =
            std::exp(cum[static_cast<size_t>(i)] - cum[static_cast<size_t>(j)]) * dot_k(q.data(), hv.k(c0 + j));
        for (int64_t c = 0; c < dv; ++c) o[static_cast<size_t>(c)] += w * d[static_cast<size_t>(j * dv + c)];
      }
      std::copy(o.begin(), o.end(), hv.out(c0 + i));
    }
    const float last = cum[static_cast<size_t>(n - 1)], e_last = std::exp(last);
    for (auto& x : s) x *= e_last;
    for (int64_t j = 0; j < n; ++j) {
      const float w = std::exp(last - cum[static_cast<size_t>(j)]);
      const float* k = hv.k(c0 + j);
      for (int64_t r = 0; r < dk; ++r)
        for (int64_t c = 0; c < dv; ++c)
          s[static_cast<size_t>(r * dv + c)] += w * k[r] * d[static_cast<size_t>(j * dv + c)];
    }
  }
}

}  // namespace

static void gated_delta_rule(const GatedDeltaRuleArgs& a) {
  const AttnMetadata& m = *a.meta;
  const int64_t nv = a.state.size(1), dk = a.state.size(2), dv = a.state.size(3), nk = a.num_k_heads;
  const int64_t width = a.qkv.size(1), group = nv / nk;
  for (int64_t b = 0; b < m.batch_size; ++b) {
    const int64_t start = m.q_start_loc.data<int32_t>()[b], len = m.q_seqlens.data<int32_t>()[b];
    const int64_t past = m.kv_seqlens.data<int32_t>()[b] - len;
    const int32_t slot = m.state_slots.data<int32_t>()[b];
    if (slot < 0) {
      std::fill(a.out.data<float>() + start * nv * dv, a.out.data<float>() + (start + len) * nv * dv, 0.0f);
      continue;
    }
    for (int64_t h = 0; h < nv; ++h) {
      float* slot_state = a.state.data<float>() + (static_cast<int64_t>(slot) * nv + h) * dk * dv;
      std::vector<float> s(static_cast<size_t>(dk * dv), 0.0f);
      if (past > 0) s.assign(slot_state, slot_state + dk * dv);
      const HeadView hv{a, start, h, h / group, dk, dv, nk, nv, width};
      if (a.form == DeltaRuleForm::Chunked && len > 1)
        chunked(hv, len, a.scale, s);
      else
        recurrent(hv, len, a.scale, s);
      std::copy(s.begin(), s.end(), slot_state);
    }
  }
}

void register_gated_delta_rule(Registry& reg) {
  reg.add<OpType::GatedDeltaRule>(kReferenceVendor, DType::F32, gated_delta_rule, "reference::gated_delta_rule");
}

}  // namespace opchain::reference
