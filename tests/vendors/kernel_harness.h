#pragma once
// The per-op kernel harness: shape cases for every op key and the machinery that runs one kernel
// against the reference kernel of the same key and dtype on them (kernel_harness_test.cpp runs every
// non-reference kernel of the registry through it; cpu_kernels_test.cpp reuses it).
//
// A case builds an Instance for a dtype: its inputs (held by the call closure), the initial content
// of every tensor a kernel writes (`outs`: outputs, in-place tensors, caches), and a call that binds
// the op's Args over a copy of `outs` and runs a kernel. Each kernel gets its own copy of `outs`, so
// in-place updates and untouched regions (padding rows, other columns) are compared as well. A case
// that leaves out a tensor the op's field list marks as written fails (expect_writes_compared).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/expert_weights.h"
#include "ops/matmul_precision.h"
#include "ops/op_fields.h"
#include "ops/registry.h"
#include "ops/step_metadata.h"
#include "vendors/builtin_vendors.h"
#include "vendors/plugin_loader.h"

namespace opchain::harness {

// The registry the harness runs: the built-in vendors, the example plugin vendor (examples/vendor-plugin,
// built into build/tests/plugins by tests/CMakeLists.txt), the vendor ABI 1.1 test plugins (abi11:
// attention and MoE kernels over the marshalled metadata; fakedev: memory hooks) and every plugin of
// OPCHAIN_VENDOR_PLUGINS,
// so a plugin vendor is run against reference like a built-in one. Filled once, at test registration;
// a plugin that fails to load is reported by HarnessCoverage.PluginVendorsLoad, not here.
struct HarnessRegistry {
  Registry reg;
  std::string load_error;  // empty: every plugin loaded
};
inline const HarnessRegistry& harness_registry() {
  static const HarnessRegistry* h = [] {
    auto* r = new HarnessRegistry;  // never destroyed: the registry's plugins stay loaded for the process
    register_builtin_vendors(r->reg);
    try {
      const std::string dir = OPCHAIN_TEST_PLUGIN_DIR;
      load_vendor_plugins(
          r->reg, {dir + "/libexample.so", dir + "/libtest_plugin_abi11.so", dir + "/libtest_plugin_fakedev.so"});
    } catch (const Error& e) {
      r->load_error = e.what();
    }
    return r;
  }();
  return *h;
}

using Outs = std::vector<Tensor>;
// Binds the Args over `outs` and calls fn; with fn == nullptr only reports the dispatch dtype.
using CallFn = std::function<DType(void (*fn)(), const Outs& outs)>;

struct Instance {
  std::vector<std::string> out_names;
  Outs outs;
  CallFn call;
};

struct Case {
  std::string name;
  std::function<Instance(DType dtype, std::mt19937& rng)> make;
  // A case of a quantised weight (Note [Quantised weights]) runs on the quantised dtypes only (u8, i8,
  // f8e4m3), every other case on the others.
  bool quantized = false;
  // 0: the op table's tolerance. A case whose kernel rounds an intermediate to bf16 (fused_moe in a bf16
  // activation form rounds silu(g) * u) may move one element by a bf16 ulp (2^-8) for an f32 rounding
  // difference upstream, and says so here.
  double tolerance = 0.0;
  bool applies_to(DType t) const { return quantized == is_quantized_dtype(t); }
};

// Every tensor the op's field list marks as written (Role::Out, Role::InOut) must lie in one of the
// case's `outs`, so that it is compared with the reference (Note [Op fields]).
template <class Args>
void expect_writes_compared(std::string_view key, const Args& args, const Outs& outs) {
  visit_field_tensors(args, [&](const char* name, const Tensor& t, bool is_output) {
    if (!is_output) return;
    const auto* p = static_cast<const char*>(t.raw());
    const bool compared = std::any_of(outs.begin(), outs.end(), [&](const Tensor& o) {
      const auto* base = static_cast<const char*>(o.raw());
      return p >= base && p < base + o.nbytes();
    });
    EXPECT_TRUE(compared) << key << ": the case does not compare '" << name << "', which the kernel writes";
  });
}

template <OpType Op, class Build>
CallFn make_call(Build build) {
  return [build](void (*fn)(), const Outs& outs) {
    const typename OpTraits<Op>::Args args = build(outs);
    if (fn)
      reinterpret_cast<typename OpTraits<Op>::Fn>(fn)(args);
    else
      expect_writes_compared(op_key(Op), args, outs);
    return OpTraits<Op>::dispatch_dtype(args);
  };
}

// ---- tensors ----------------------------------------------------------------------------------

inline float uniform(std::mt19937& g, float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(g() >> 8) * (1.0f / 16777216.0f);
}
inline int randint(std::mt19937& g, int lo, int hi) {  // [lo, hi]
  return lo + static_cast<int>(g() % static_cast<uint32_t>(hi - lo + 1));
}

// Element i of a float-typed tensor (f32, bf16, f16) set to v.
inline void set_float(Tensor& t, int64_t i, float v) {
  switch (t.dtype()) {
    case DType::F32:
      t.data<float>()[i] = v;
      break;
    case DType::BF16:
      t.data<uint16_t>()[i] = f32_to_bf16(v);
      break;
    case DType::F16:
      t.data<uint16_t>()[i] = f32_to_f16(v);
      break;
    default:
      ADD_FAILURE() << "set_float: not a float tensor " << t.desc();
  }
}
// Uniform in [lo, hi), stored as `dtype` (f32, bf16, f16).
inline Tensor rand_tensor(std::mt19937& g, DType dtype, Shape s, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::empty(dtype, s);
  for (int64_t i = 0; i < t.numel(); ++i) {
    set_float(t, i, uniform(g, lo, hi));
  }
  return t;
}
inline Tensor rand_f32(std::mt19937& g, Shape s, float lo = -1.0f, float hi = 1.0f) {
  return rand_tensor(g, DType::F32, s, lo, hi);
}
inline Tensor i32_tensor(const std::vector<int32_t>& v, Shape s) {
  Tensor t = Tensor::empty(DType::I32, s);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}
inline Tensor i32_tensor(const std::vector<int32_t>& v) { return i32_tensor(v, {static_cast<int64_t>(v.size())}); }
inline Tensor rand_i32(std::mt19937& g, Shape s, int lo, int hi) {
  Tensor t = Tensor::empty(DType::I32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = randint(g, lo, hi);
  return t;
}
inline Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes()) std::memcpy(c.raw(), t.raw(), t.nbytes());
  return c;
}
inline Outs clone_all(const Outs& outs) {
  Outs c;
  for (const Tensor& t : outs) c.push_back(clone(t));
  return c;
}

// ---- comparison -------------------------------------------------------------------------------

// Empty when `got` matches `ref`: float tensors within max |diff| / (1 + |ref|) <= tol (0: exact),
// integer tensors exactly. Otherwise a description of the worst element.
inline std::string compare(const Tensor& ref, const Tensor& got, double tol) {
  if (!(ref.shape() == got.shape()) || ref.dtype() != got.dtype())
    return "shape/dtype " + got.desc() + " vs reference " + ref.desc();
  const bool is_float = ref.dtype() == DType::F32 || ref.dtype() == DType::BF16 || ref.dtype() == DType::F16;
  if (!is_float) {
    const size_t es = dtype_size(ref.dtype());
    for (int64_t i = 0; i < ref.numel(); ++i) {
      if (std::memcmp(static_cast<const char*>(ref.raw()) + i * es, static_cast<const char*>(got.raw()) + i * es, es) !=
          0) {
        std::ostringstream os;
        int64_t r = 0, g = 0;
        std::memcpy(&r, static_cast<const char*>(ref.raw()) + i * es, es);
        std::memcpy(&g, static_cast<const char*>(got.raw()) + i * es, es);
        os << "element " << i << ": got " << g << ", reference " << r << " (integers must match exactly)";
        return os.str();
      }
    }
    return {};
  }
  double worst = 0.0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = load_as_f32(ref.raw(), ref.dtype(), static_cast<size_t>(i));
    const double g = load_as_f32(got.raw(), got.dtype(), static_cast<size_t>(i));
    if (std::isnan(r) && std::isnan(g)) continue;
    const double err = std::fabs(g - r) / (1.0 + std::fabs(r));
    if (!(err <= worst) || std::isnan(err)) {
      worst = std::isnan(err) ? INFINITY : err;
      worst_i = i;
    }
  }
  if (worst_i < 0 || worst <= tol) return {};
  std::ostringstream os;
  os.precision(9);
  os << "max |diff|/(1+|ref|) = " << worst << " > tolerance " << tol << " at element " << worst_i << " (got "
     << load_as_f32(got.raw(), got.dtype(), static_cast<size_t>(worst_i)) << ", reference "
     << load_as_f32(ref.raw(), ref.dtype(), static_cast<size_t>(worst_i)) << ")";
  return os.str();
}

inline bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// FNV-1a: a seed per case that does not depend on the standard library.
inline uint32_t seed_of(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// Runs `kernel` and the reference kernel on one case and records gtest failures naming `what`.
// The kernel runs twice: its two results must be bit-identical (deterministic across runs).
inline void run_case(OpType op, const Case& c, DType dtype, void (*kernel)(), void (*reference)(),
                     const std::string& what) {
  std::mt19937 rng(seed_of(std::string(op_key(op)) + "/" + c.name + "/" + std::string(dtype_name(dtype))));
  const Instance inst = c.make(dtype, rng);
  ASSERT_EQ(inst.outs.size(), inst.out_names.size()) << what;
  {
    Outs probe = clone_all(inst.outs);
    ASSERT_EQ(inst.call(nullptr, probe), dtype) << what << ": the case builds the wrong dispatch dtype";
  }
  Outs ref = clone_all(inst.outs), got = clone_all(inst.outs), again = clone_all(inst.outs);
  inst.call(reference, ref);
  inst.call(kernel, got);
  inst.call(kernel, again);
  const double tol = c.tolerance > 0 ? c.tolerance : op_info(op).tolerance;
  for (size_t i = 0; i < ref.size(); ++i) {
    const std::string err = compare(ref[i], got[i], tol);
    EXPECT_TRUE(err.empty()) << what << ", output '" << inst.out_names[i] << "' " << got[i].desc() << ": " << err;
    EXPECT_TRUE(bit_equal(got[i], again[i]))
        << what << ", output '" << inst.out_names[i] << "': two runs of the kernel differ (not deterministic)";
  }
}

// ---- metadata builders ------------------------------------------------------------------------

struct SeqLens {
  int q_len, kv_len;
};

// Attention metadata for sequences laid out back to back (plus `pad_rows` unused rows after them),
// with a paged cache of `block_size` whose physical blocks are shuffled (tables cross blocks).
struct AttnSetup {
  std::shared_ptr<AttnMetadata> meta = std::make_shared<AttnMetadata>();
  int64_t rows = 0;        // q rows incl. padding
  int64_t num_blocks = 0;  // physical cache blocks
};

inline AttnSetup make_attn(std::mt19937& g, const std::vector<SeqLens>& seqs, int64_t block_size, int64_t pad_rows,
                           bool decoding) {
  AttnSetup s;
  AttnMetadata& m = *s.meta;
  const int64_t batch = static_cast<int64_t>(seqs.size());
  int64_t max_blocks = 1, total_blocks = 0, tokens = 0;
  for (const auto& q : seqs) {
    const int64_t nb = (q.kv_len + block_size - 1) / block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    tokens += q.q_len;
  }
  s.num_blocks = total_blocks + 3;  // spare blocks nobody uses
  std::vector<int32_t> phys(static_cast<size_t>(s.num_blocks));
  std::iota(phys.begin(), phys.end(), 0);
  std::shuffle(phys.begin(), phys.end(), g);
  std::vector<int32_t> table(static_cast<size_t>(batch * max_blocks), 0);
  std::vector<int32_t> start, qlen, kvlen, slots;
  size_t next = 0;
  int32_t row = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t nb = (seqs[b].kv_len + block_size - 1) / block_size;
    for (int64_t i = 0; i < nb; ++i) table[static_cast<size_t>(b * max_blocks + i)] = phys[next++];
    start.push_back(row);
    qlen.push_back(seqs[b].q_len);
    kvlen.push_back(seqs[b].kv_len);
    for (int p = seqs[b].kv_len - seqs[b].q_len; p < seqs[b].kv_len; ++p)
      slots.push_back(static_cast<int32_t>(table[static_cast<size_t>(b * max_blocks + p / block_size)] * block_size +
                                           p % block_size));
    row += seqs[b].q_len;
  }
  for (int64_t i = 0; i < pad_rows; ++i) slots.push_back(-1);
  s.rows = tokens + pad_rows;
  m.is_decoding = decoding;
  m.batch_size = batch;
  m.num_tokens = s.rows;
  m.block_size = block_size;
  for (const auto& q : seqs) {
    m.max_q_seqlen = std::max<int64_t>(m.max_q_seqlen, q.q_len);
    m.max_kv_seqlen = std::max<int64_t>(m.max_kv_seqlen, q.kv_len);
  }
  m.q_start_loc = i32_tensor(start, {batch});
  m.q_seqlens = i32_tensor(qlen, {batch});
  m.kv_seqlens = i32_tensor(kvlen, {batch});
  m.block_tables = i32_tensor(table, {batch, max_blocks});
  m.slot_mapping = i32_tensor(slots, {s.rows});
  return s;
}

// Router choices: k distinct experts per token drawn from `allowed`, and positive weights.
inline void make_routing(std::mt19937& g, int64_t n, int64_t k, const std::vector<int32_t>& allowed, Tensor& ids,
                         Tensor& weights) {
  ids = Tensor::empty(DType::I32, {n, k});
  weights = Tensor::empty(DType::F32, {n, k});
  for (int64_t t = 0; t < n; ++t) {
    std::vector<int32_t> pool = allowed;
    std::shuffle(pool.begin(), pool.end(), g);
    for (int64_t j = 0; j < k; ++j) {
      ids.data<int32_t>()[t * k + j] = pool[static_cast<size_t>(j)];
      weights.data<float>()[t * k + j] = uniform(g, 0.05f, 1.0f);
    }
  }
}

inline std::shared_ptr<MoeMetadata> make_moe_meta(int64_t real, int64_t pad, const std::vector<int64_t>& masked = {}) {
  auto m = std::make_shared<MoeMetadata>();
  m->num_tokens = real;
  m->pad_size = pad;
  if (pad > 0 || !masked.empty()) {
    m->x_active_mask = Tensor::empty(DType::U8, {real + pad});
    for (int64_t t = 0; t < real + pad; ++t) m->x_active_mask.data<uint8_t>()[t] = t < real ? 1 : 0;
    for (int64_t t : masked) m->x_active_mask.data<uint8_t>()[t] = 0;
  }
  return m;
}

inline std::vector<int32_t> iota_i32(int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// ---- the cases of each op ---------------------------------------------------------------------

inline std::vector<Case> embedding_cases() {
  auto mk = [](std::string name, int64_t n, int64_t vocab, int64_t h, bool bad_ids) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor ids = rand_i32(g, {n}, 0, static_cast<int>(vocab - 1));
                  if (bad_ids) {
                    ids.data<int32_t>()[0] = -1;
                    ids.data<int32_t>()[n - 1] = static_cast<int32_t>(vocab);
                  }
                  Tensor w = rand_tensor(g, dt, {vocab, h});
                  Instance in{{"out"}, {rand_f32(g, {n, h})}, {}};
                  in.call = make_call<OpType::Embedding>([=](const Outs& o) { return EmbeddingArgs{ids, w, o[0]}; });
                  return in;
                }};
  };
  return {mk("1tok", 1, 50, 64, false), mk("7x33", 7, 19, 33, false), mk("300tok", 300, 1000, 128, false),
          mk("bad_ids_read_nothing", 9, 40, 24, true)};
}

inline std::vector<Case> linear_cases() {
  auto mk = [](std::string name, Shape xs, int64_t out_f, bool bias, MatmulPrecision precision = MatmulPrecision::F32) {
    return Case{
        name, [=](DType dt, std::mt19937& g) {
          const int64_t in = xs[xs.ndim - 1], rows = xs.numel() / in;
          Tensor x = rand_f32(g, xs);
          const float ws = 1.0f / std::sqrt(static_cast<float>(in));
          Tensor w = rand_tensor(g, dt, {out_f, in}, -ws, ws);
          Tensor b = bias ? rand_tensor(g, dt, {out_f}) : Tensor();
          Instance inst{{"out"}, {rand_f32(g, {rows, out_f})}, {}};
          inst.call = make_call<OpType::Linear>([=](const Outs& o) { return LinearArgs{x, w, b, o[0], precision}; });
          return inst;
        }};
  };
  return {mk("1tok_64to32", {1, 64}, 32, false), mk("7x33_to_17_bias", {7, 33}, 17, true),
          mk("300tok_64to48_bias", {300, 64}, 48, true), mk("37x300_to_70", {37, 300}, 70, false),
          mk("3d_2x5x40_to_24", {2, 5, 40}, 24, true), mk("1tok_1000to96", {1, 1000}, 96, false),
          mk("5tok_129to130", {5, 129}, 130, true),
          // Note [Matmul precision]: bf16 activations (a no-op for f32 and f16 weights). Rows 1-4 take the
          // few-row kernels, 9 and 37 the 8-row blocks; k 2048 is a real hidden size, 257 a partial vector,
          // 1300 two of the FMA form's k chunks (Note [bf16 dot forms]) ending in a partial vector.
          mk("bf16x_1tok_2048to40", {1, 2048}, 40, false, MatmulPrecision::Bf16),
          mk("bf16x_3tok_257to19_bias", {3, 257}, 19, true, MatmulPrecision::Bf16),
          mk("bf16x_4tok_512to13", {4, 512}, 13, false, MatmulPrecision::Bf16),
          mk("bf16x_37x300_to_70", {37, 300}, 70, false, MatmulPrecision::Bf16),
          mk("bf16x_9x1300_to_100_bias", {9, 1300}, 100, true, MatmulPrecision::Bf16)};
}

inline std::vector<Case> norm_cases(bool add) {
  auto mk = [add](std::string name, Shape xs, bool alias) {
    return Case{
        name, [=](DType dt, std::mt19937& g) {
          const int64_t h = xs[xs.ndim - 1];
          Tensor x = rand_f32(g, xs, -2.0f, 2.0f);
          Tensor w = rand_tensor(g, dt, {h}, 0.5f, 1.5f);
          const float eps = 1e-6f;
          Instance inst;
          if (!add) {
            if (alias) {
              inst = Instance{{"x=out"}, {x}, {}};
              inst.call = make_call<OpType::RmsNorm>([=](const Outs& o) { return RmsNormArgs{o[0], w, o[0], eps}; });
            } else {
              inst = Instance{{"out"}, {rand_f32(g, xs)}, {}};
              inst.call = make_call<OpType::RmsNorm>([=](const Outs& o) { return RmsNormArgs{x, w, o[0], eps}; });
            }
          } else {
            Tensor res = rand_f32(g, xs, -2.0f, 2.0f);
            if (alias) {
              inst = Instance{{"residual", "x=out"}, {res, x}, {}};
              inst.call = make_call<OpType::AddRmsNorm>([=](const Outs& o) {
                return AddRmsNormArgs{o[1], o[0], w, o[1], eps};
              });
            } else {
              inst = Instance{{"residual", "out"}, {res, rand_f32(g, xs)}, {}};
              inst.call = make_call<OpType::AddRmsNorm>([=](const Outs& o) {
                return AddRmsNormArgs{x, o[0], w, o[1], eps};
              });
            }
          }
          return inst;
        }};
  };
  return {mk("1x64", {1, 64}, false), mk("7x33", {7, 33}, false), mk("300x128", {300, 128}, false),
          mk("3d_3x5x33", {3, 5, 33}, false), mk("alias_out_is_x_7x33", {7, 33}, true)};
}

inline std::vector<Case> rotary_embedding_cases() {
  auto mk = [](std::string name, int64_t n, int64_t d, float scaling, int max_pos) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  const int64_t half = d / 2;
                  Tensor pos = rand_i32(g, {n}, 0, max_pos);
                  Tensor inv = Tensor::empty(dt, {half});
                  for (int64_t j = 0; j < half; ++j)
                    set_float(inv, j, std::pow(10000.0f, -2.0f * static_cast<float>(j) / static_cast<float>(d)));
                  Instance inst{{"cos", "sin"}, {rand_f32(g, {n, half}), rand_f32(g, {n, half})}, {}};
                  inst.call = make_call<OpType::RotaryEmbedding>([=](const Outs& o) {
                    return RotaryEmbeddingArgs{pos, inv, scaling, o[0], o[1]};
                  });
                  return inst;
                }};
  };
  return {mk("1tok_d64", 1, 64, 1.0f, 4096), mk("7tok_d10_scaled", 7, 10, 1.25f, 100),
          mk("300tok_d128_far", 300, 128, 1.0f, 32768)};
}

inline std::vector<Case> apply_rotary_cases() {
  auto mk = [](std::string name, int64_t n, int64_t hq, int64_t hk, int64_t d) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor cos = rand_f32(g, {n, d / 2}), sin = rand_f32(g, {n, d / 2});
                  Instance inst{{"q", "k"}, {rand_tensor(g, dt, {n, hq, d}), rand_f32(g, {n, hk, d})}, {}};
                  inst.call = make_call<OpType::ApplyRotaryPosEmb>([=](const Outs& o) {
                    return ApplyRotaryPosEmbArgs{o[0], o[1], cos, sin};
                  });
                  return inst;
                }};
  };
  // rd < d: the partial rotary of Qwen3-Next / Qwen3.5 (channels past rd must stay untouched).
  auto partial = [](std::string name, int64_t n, int64_t hq, int64_t hk, int64_t d, int64_t rd) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor cos = rand_f32(g, {n, rd / 2}), sin = rand_f32(g, {n, rd / 2});
                  Instance inst{{"q", "k"}, {rand_tensor(g, dt, {n, hq, d}), rand_f32(g, {n, hk, d})}, {}};
                  inst.call = make_call<OpType::ApplyRotaryPosEmb>([=](const Outs& o) {
                    return ApplyRotaryPosEmbArgs{o[0], o[1], cos, sin};
                  });
                  return inst;
                }};
  };
  return {mk("1tok_hq4_hk2_d16", 1, 4, 2, 16), mk("7tok_hq3_hk1_d10", 7, 3, 1, 10),
          mk("300tok_hq8_hk2_d64", 300, 8, 2, 64), partial("partial_1tok_hq4_hk2_d32_rd8", 1, 4, 2, 32, 8),
          partial("partial_37tok_hq16_hk2_d256_rd64", 37, 16, 2, 256, 64)};
}

inline std::vector<Case> fill_kv_cache_cases() {
  auto mk = [](std::string name, std::vector<SeqLens> seqs, int64_t bs, int64_t pad, int64_t hk, int64_t d) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  AttnSetup s = make_attn(g, seqs, bs, pad, false);
                  Tensor k = rand_f32(g, {s.rows, hk, d}), v = rand_f32(g, {s.rows, hk, d});
                  Instance inst{
                      {"k_cache", "v_cache"},
                      {rand_tensor(g, dt, {s.num_blocks, bs, hk, d}), rand_tensor(g, dt, {s.num_blocks, bs, hk, d})},
                      {}};
                  auto meta = s.meta;
                  inst.call = make_call<OpType::FillKvCache>([=](const Outs& o) {
                    return FillKvCacheArgs{k, v, o[0], o[1], meta.get()};
                  });
                  return inst;
                }};
  };
  return {mk("1tok", {{1, 1}}, 16, 0, 2, 16), mk("7tok_3seq_padding_bs4", {{2, 9}, {4, 4}, {1, 6}}, 4, 3, 1, 12),
          mk("300tok_shuffled_bs16", {{150, 170}, {100, 100}, {50, 77}}, 16, 0, 2, 32)};
}

// Prefill attention at a bf16 precision may round q, k, v and the weights to bf16 (Note [Matmul
// precision]); the reference stays f32. On random inputs of these shapes the AMX path's largest
// |diff| / (1 + |ref|) was 3-5e-3 (Emerald Rapids), so this leaves a factor of two.
inline constexpr double kBf16AttentionTolerance = 1e-2;

inline std::vector<Case> prefill_attention_cases() {
  auto mk = [](std::string name, std::vector<int> lens, int64_t pad, int64_t hq, int64_t hk, int64_t d,
               MatmulPrecision prec = MatmulPrecision::F32) {
    return Case{name,
                [=](DType dt, std::mt19937& g) {
                  std::vector<SeqLens> seqs;
                  for (int l : lens) seqs.push_back({l, l});
                  AttnSetup s = make_attn(g, seqs, 16, pad, false);
                  Tensor q = rand_tensor(g, dt, {s.rows, hq, d}, -2.0f, 2.0f);
                  Tensor k = rand_f32(g, {s.rows, hk, d}, -2.0f, 2.0f), v = rand_f32(g, {s.rows, hk, d});
                  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
                  Instance inst{{"out"}, {rand_f32(g, {s.rows, hq, d})}, {}};
                  auto meta = s.meta;
                  inst.call = make_call<OpType::PrefillAttention>(
                      [=](const Outs& o) { return PrefillAttentionArgs{q, k, v, o[0], scale, meta.get(), prec}; });
                  return inst;
                },
                false, prec == MatmulPrecision::F32 ? 0.0 : kBf16AttentionTolerance};
  };
  // The bf16 cases: q, k, v and the weights rounded to bf16 (Note [AMX attention] on Isa::Amx for head
  // dims that are multiples of 32, the f32 loops elsewhere), past one chunk of 64 and across several.
  const MatmulPrecision bf = MatmulPrecision::Bf16;
  return {mk("1seq_1tok_gqa1", {1}, 0, 2, 2, 16),
          mk("3seq_1_7_33_gqa2", {1, 7, 33}, 0, 4, 2, 24),
          mk("2seq_150_150_gqa4", {150, 150}, 0, 8, 2, 32),
          mk("2seq_5_3_pad2_gqa3_d12", {5, 3}, 2, 3, 1, 12),
          mk("bf16_3seq_1_40_150_gqa8_d64", {1, 40, 150}, 0, 16, 2, 64, bf),
          mk("bf16_2seq_70_20_pad2_gqa4_d128", {70, 20}, 2, 8, 2, 128, bf),
          mk("bf16_1seq_9_gqa2_d24", {9}, 0, 4, 2, 24, bf)};
}

inline std::vector<Case> paged_prefill_attention_cases() {
  auto mk = [](std::string name, std::vector<SeqLens> seqs, int64_t bs, int64_t pad, int64_t hq, int64_t hk, int64_t d,
               MatmulPrecision prec = MatmulPrecision::F32) {
    return Case{name,
                [=](DType dt, std::mt19937& g) {
                  AttnSetup s = make_attn(g, seqs, bs, pad, false);
                  Tensor q = rand_f32(g, {s.rows, hq, d}, -2.0f, 2.0f);
                  Tensor kc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f);
                  Tensor vc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d});
                  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
                  Instance inst{{"out"}, {rand_f32(g, {s.rows, hq, d})}, {}};
                  auto meta = s.meta;
                  inst.call = make_call<OpType::PagedPrefillAttention>([=](const Outs& o) {
                    return PagedPrefillAttentionArgs{q, kc, vc, o[0], scale, meta.get(), prec};
                  });
                  return inst;
                },
                false, prec == MatmulPrecision::F32 ? 0.0 : kBf16AttentionTolerance};
  };
  const MatmulPrecision bf = MatmulPrecision::Bf16;
  return {mk("1seq_q1_kv1_bs4", {{1, 1}}, 4, 0, 2, 2, 16),
          mk("3seq_cached_bs4_gqa2", {{3, 10}, {1, 17}, {7, 7}}, 4, 0, 4, 2, 24),
          mk("4seq_bs16_gqa4_pad3", {{20, 45}, {1, 1}, {33, 90}, {5, 16}}, 16, 3, 8, 2, 32),
          mk("300tok_2seq_bs16_gqa1_d20", {{150, 200}, {150, 170}}, 16, 0, 2, 2, 20),
          mk("bf16_3seq_cached_bs16_gqa4_d64", {{20, 130}, {1, 70}, {64, 64}}, 16, 0, 8, 2, 64, bf),
          mk("bf16_2seq_cached_bs4_pad3_gqa2_d32", {{33, 100}, {5, 9}}, 4, 3, 4, 2, 32, bf)};
}

inline std::vector<Case> paged_decode_attention_cases() {
  auto mk = [](std::string name, std::vector<int> kv, int64_t bs, int64_t pad, int64_t hq, int64_t hk, int64_t d) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  std::vector<SeqLens> seqs;
                  for (int l : kv) seqs.push_back({1, l});
                  AttnSetup s = make_attn(g, seqs, bs, pad, true);
                  Tensor q = rand_f32(g, {s.rows, hq, d}, -2.0f, 2.0f);
                  Tensor kc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d}, -2.0f, 2.0f);
                  Tensor vc = rand_tensor(g, dt, {s.num_blocks, bs, hk, d});
                  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
                  Instance inst{{"out"}, {rand_f32(g, {s.rows, hq, d})}, {}};
                  auto meta = s.meta;
                  inst.call = make_call<OpType::PagedDecodeAttention>(
                      [=](const Outs& o) { return PagedDecodeAttentionArgs{q, kc, vc, o[0], scale, meta.get()}; });
                  return inst;
                }};
  };
  std::vector<int> many;
  for (int i = 0; i < 37; ++i) many.push_back(1 + (i * 37) % 101);
  // The cpu vendor cuts the kv axis every 1024 positions and merges the pieces (Note [decode attention]):
  // lengths one short of, at and past those boundaries.
  return {mk("b1_kv1", {1}, 16, 0, 2, 2, 16),
          mk("b5_bs4_gqa2_pad2", {1, 4, 5, 17, 33}, 4, 2, 4, 2, 24),
          mk("b37_bs16_gqa4", many, 16, 0, 8, 2, 32),
          mk("b3_long_bs8_gqa1_d72", {300, 129, 64}, 8, 0, 2, 2, 72),
          mk("b4_segments_bs16_gqa8_d128", {2100, 1024, 1025, 2047}, 16, 0, 16, 2, 128),
          mk("b2_segments_bs8_gqa6_d72", {40, 1100}, 8, 0, 12, 2, 72)};
}

inline std::vector<Case> gated_act_cases(bool swiglu) {
  auto mk = [swiglu](std::string name, int64_t n, int64_t i) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor x = rand_tensor(g, dt, {n, 2 * i}, -4.0f, 4.0f);
                  Instance inst{{"out"}, {rand_f32(g, {n, i})}, {}};
                  if (swiglu)
                    inst.call = make_call<OpType::Swiglu>([=](const Outs& o) { return SwigluArgs{x, o[0]}; });
                  else
                    inst.call = make_call<OpType::SiluAndMul>([=](const Outs& o) { return SiluAndMulArgs{x, o[0]}; });
                  return inst;
                }};
  };
  return {mk("1x8", 1, 8), mk("7x33", 7, 33), mk("300x64", 300, 64)};
}

inline std::vector<Case> gating_cases() {
  auto mk = [](std::string name, int64_t n, int64_t e, int64_t k, bool renorm, int64_t groups, int64_t keep,
               bool ties) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor logits = rand_tensor(g, dt, {n, e}, -3.0f, 3.0f);
                  if (ties)  // few distinct values: ties between experts and between groups
                    for (int64_t i = 0; i < n * e; ++i)
                      set_float(logits, i, 0.5f * static_cast<float>(randint(g, 0, 2)));
                  auto meta = std::make_shared<MoeMetadata>();
                  meta->num_tokens = n;
                  meta->router_n_groups = groups;
                  meta->router_topk_groups = keep;
                  Instance inst{{"topk_weights", "topk_ids"}, {rand_f32(g, {n, k}), rand_i32(g, {n, k}, -5, 5)}, {}};
                  inst.call = make_call<OpType::MoeGatingTopkSoftmax>([=](const Outs& o) {
                    return MoeGatingTopkSoftmaxArgs{logits, o[0], o[1], k, renorm, meta.get()};
                  });
                  return inst;
                }};
  };
  return {mk("1tok_e8_k2_renorm", 1, 8, 2, true, 0, 0, false),
          mk("7tok_e33_k3", 7, 33, 3, false, 0, 0, false),
          mk("300tok_e64_k6_renorm", 300, 64, 6, true, 0, 0, false),
          mk("grouped_e16_g4_keep2_k4_renorm", 37, 16, 4, true, 4, 2, false),
          mk("ties_e8_k3", 20, 8, 3, true, 0, 0, true),
          mk("grouped_ties_e12_g4_keep2_k3", 20, 12, 3, false, 4, 2, true)};
}

struct MoeShape {
  int64_t n, pad, h, inter, experts, k;
  std::vector<int32_t> allowed;  // experts the router may pick (others receive no token)
  std::vector<int64_t> masked;   // real rows with x_active_mask == 0
};

inline std::vector<MoeShape> moe_shapes() {
  return {{1, 0, 32, 16, 4, 2, {0, 1, 2, 3}, {}},
          {7, 0, 33, 17, 5, 2, {0, 1, 2, 4}, {}},  // expert 3 receives no token
          {300, 0, 32, 24, 8, 2, iota_i32(8), {}},
          {12, 4, 24, 20, 6, 3, {0, 2, 3, 4, 5}, {2, 7}}};  // masked rows and padding rows
}
inline std::string moe_shape_name(const MoeShape& s) {
  std::string n = std::to_string(s.n) + "tok_h" + std::to_string(s.h) + "_i" + std::to_string(s.inter) + "_e" +
                  std::to_string(s.experts) + "_k" + std::to_string(s.k);
  if (static_cast<int64_t>(s.allowed.size()) < s.experts) n += "_idle_expert";
  if (s.pad || !s.masked.empty()) n += "_masked_pad" + std::to_string(s.pad);
  return n;
}

inline std::shared_ptr<ExpertWeights> make_experts(std::mt19937& g, DType dt, int64_t experts, int64_t h,
                                                   int64_t inter) {
  auto w = std::make_shared<ExpertWeights>();
  const float sh = 1.0f / std::sqrt(static_cast<float>(h)), si = 1.0f / std::sqrt(static_cast<float>(inter));
  for (int64_t e = 0; e < experts; ++e) {
    w->gate.push_back(rand_tensor(g, dt, {inter, h}, -2 * sh, 2 * sh));
    w->up.push_back(rand_tensor(g, dt, {inter, h}, -2 * sh, 2 * sh));
    w->down.push_back(rand_tensor(g, dt, {h, inter}, -si, si));
  }
  return w;
}

inline std::vector<Case> fused_moe_cases() {
  std::vector<Case> cases;
  for (const MoeShape& s : moe_shapes()) {
    for (MatmulPrecision precision : {MatmulPrecision::F32, MatmulPrecision::Bf16})
      cases.push_back({moe_shape_name(s) + (precision == MatmulPrecision::Bf16 ? "_bf16x" : ""),
                       [s, precision](DType dt, std::mt19937& g) {
                         const int64_t rows = s.n + s.pad;
                         Tensor hidden = rand_f32(g, {rows, s.h}, -2.0f, 2.0f), ids, weights;
                         make_routing(g, rows, s.k, s.allowed, ids, weights);
                         auto experts = make_experts(g, dt, s.experts, s.h, s.inter);
                         auto meta = make_moe_meta(s.n, s.pad, s.masked);
                         Instance inst{{"out"}, {rand_f32(g, {rows, s.h})}, {}};
                         inst.call = make_call<OpType::FusedMoe>([=](const Outs& o) {
                           return FusedMoeArgs{hidden, experts.get(), weights, ids, o[0], meta.get(), precision};
                         });
                         return inst;
                       }});
  }
  return cases;
}

inline std::vector<Case> moe_init_routing_cases() {
  std::vector<Case> cases;
  for (const MoeShape& s : moe_shapes()) {
    cases.push_back({moe_shape_name(s), [s](DType dt, std::mt19937& g) {
                       const int64_t rows = s.n + s.pad, pairs = rows * s.k;
                       Tensor x = rand_tensor(g, dt, {rows, s.h}), ids, weights;
                       make_routing(g, rows, s.k, s.allowed, ids, weights);
                       auto meta = make_moe_meta(s.n, s.pad, s.masked);
                       const int64_t experts = s.experts;
                       Instance inst{
                           {"x_sorted", "expert_offsets", "pair_to_sorted"},
                           {rand_f32(g, {pairs, s.h}), rand_i32(g, {experts + 1}, -9, 9), rand_i32(g, {pairs}, -9, 9)},
                           {}};
                       inst.call = make_call<OpType::MoeInitRouting>([=](const Outs& o) {
                         return MoeInitRoutingArgs{x, ids, experts, meta.get(), o[0], o[1], o[2]};
                       });
                       return inst;
                     }});
  }
  return cases;
}

inline std::vector<Case> grouped_matmul_cases() {
  // counts per expert (0 = receives no row), k_in, N, ld, col_offset, extra rows past the last expert
  auto mk = [](std::string name, std::vector<int> counts, int64_t kin, int64_t nout, int64_t ld, int64_t col,
               int64_t extra, MatmulPrecision precision = MatmulPrecision::F32) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  std::vector<int32_t> off{0};
                  for (int c : counts) off.push_back(off.back() + c);
                  const int64_t m = off.back() + extra;
                  Tensor x = rand_f32(g, {m, kin});
                  auto w = std::make_shared<std::vector<Tensor>>();
                  const float ws = 1.0f / std::sqrt(static_cast<float>(kin));
                  for (size_t e = 0; e < counts.size(); ++e) w->push_back(rand_tensor(g, dt, {nout, kin}, -ws, ws));
                  Tensor offsets = i32_tensor(off);
                  Instance inst{{"out"}, {rand_f32(g, {m, ld})}, {}};
                  inst.call = make_call<OpType::GroupedMatmul>(
                      [=](const Outs& o) { return GroupedMatmulArgs{x, offsets, w.get(), o[0], col, precision}; });
                  return inst;
                }};
  };
  return {mk("1row_1expert", {1}, 64, 32, 32, 0, 0),
          mk("7rows_k33_n17_empty_expert", {3, 0, 4}, 33, 17, 17, 0, 0),
          mk("300rows_4experts", {90, 0, 150, 60}, 64, 48, 48, 0, 0),
          mk("col_offset_25_ld50", {5, 2, 0, 9}, 40, 20, 50, 25, 0),
          mk("decode_2rows_8experts_k300", {0, 1, 0, 0, 0, 1, 0, 0}, 300, 70, 140, 70, 0),
          mk("bf16x_decode_rows_1_2_3_k300", {1, 0, 2, 3}, 300, 70, 140, 70, 0, MatmulPrecision::Bf16),
          mk("bf16x_300rows_4experts", {90, 0, 150, 60}, 64, 48, 48, 0, 0, MatmulPrecision::Bf16),
          mk("unrouted_tail_rows", {4, 3}, 24, 16, 16, 0, 5)};
}

inline std::vector<Case> moe_token_unpermute_cases() {
  auto mk = [](std::string name, int64_t n, int64_t k, int64_t h, int unrouted_every) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  const int64_t pairs = n * k;
                  std::vector<int32_t> where = iota_i32(static_cast<int32_t>(pairs));
                  std::shuffle(where.begin(), where.end(), g);
                  if (unrouted_every > 0)
                    for (int64_t p = 0; p < pairs; p += unrouted_every) where[static_cast<size_t>(p)] = -1;
                  Tensor pts = i32_tensor(where);
                  Tensor eo = rand_tensor(g, dt, {pairs, h}, -2.0f, 2.0f);
                  Tensor tw = rand_f32(g, {n, k}, 0.0f, 1.0f);
                  Instance inst{{"out"}, {rand_f32(g, {n, h})}, {}};
                  inst.call = make_call<OpType::MoeTokenUnpermute>([=](const Outs& o) {
                    return MoeTokenUnpermuteArgs{eo, pts, tw, o[0]};
                  });
                  return inst;
                }};
  };
  return {mk("1tok_k2", 1, 2, 32, 0), mk("7tok_k3_h33_unrouted", 7, 3, 33, 4), mk("300tok_k2_h64", 300, 2, 64, 7)};
}

inline std::vector<Case> sigmoid_gated_add_cases() {
  auto mk = [](std::string name, int64_t n, int64_t h) {
    return Case{name, [=](DType dt, std::mt19937& g) {
                  Tensor gate = rand_f32(g, {n, 1}, -4.0f, 4.0f);
                  Tensor y = rand_tensor(g, dt, {n, h}, -2.0f, 2.0f);
                  Instance inst{{"out"}, {rand_f32(g, {n, h})}, {}};
                  inst.call = make_call<OpType::SigmoidGatedAdd>([=](const Outs& o) {
                    return SigmoidGatedAddArgs{gate, y, o[0]};
                  });
                  return inst;
                }};
  };
  return {mk("1x64", 1, 64), mk("7x33", 7, 33), mk("300x128", 300, 128)};
}

}  // namespace opchain::harness

#include "vendors/hybrid_cases.h"
#include "vendors/quant_cases.h"

namespace opchain::harness {

inline std::vector<Case> concat(std::vector<Case> a, const std::vector<Case>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every op's cases. An op missing here fails HarnessCoverage.EveryOpHasShapeCases.
inline const std::map<OpType, std::vector<Case>>& all_cases() {
  static const std::map<OpType, std::vector<Case>> cases = {
      {OpType::Embedding, embedding_cases()},
      {OpType::Linear, concat(linear_cases(), quant_linear_cases())},
      {OpType::RmsNorm, norm_cases(false)},
      {OpType::AddRmsNorm, norm_cases(true)},
      {OpType::RotaryEmbedding, rotary_embedding_cases()},
      {OpType::ApplyRotaryPosEmb, apply_rotary_cases()},
      {OpType::FillKvCache, fill_kv_cache_cases()},
      {OpType::PrefillAttention, prefill_attention_cases()},
      {OpType::PagedPrefillAttention, paged_prefill_attention_cases()},
      {OpType::PagedDecodeAttention, paged_decode_attention_cases()},
      {OpType::SiluAndMul, gated_act_cases(false)},
      {OpType::MoeGatingTopkSoftmax, gating_cases()},
      {OpType::FusedMoe, concat(fused_moe_cases(), quant_fused_moe_cases())},
      {OpType::MoeInitRouting, moe_init_routing_cases()},
      {OpType::GroupedMatmul, concat(grouped_matmul_cases(), quant_grouped_matmul_cases())},
      {OpType::Swiglu, gated_act_cases(true)},
      {OpType::MoeTokenUnpermute, moe_token_unpermute_cases()},
      {OpType::SigmoidGatedAdd, sigmoid_gated_add_cases()},
      {OpType::ZeroCenteredRmsNorm, zero_centered_rms_norm_cases()},
      {OpType::L2Norm, l2_norm_cases()},
      {OpType::CausalConv1d, causal_conv1d_cases()},
      {OpType::GdnGating, gdn_gating_cases()},
      {OpType::GatedDeltaRule, gated_delta_rule_cases()},
      {OpType::GatedRmsNorm, gated_rms_norm_cases()},
      {OpType::SigmoidGateMul, sigmoid_gate_mul_cases()},
  };
  return cases;
}

inline const std::vector<Case>& cases_for(OpType op) {
  static const std::vector<Case> none;
  auto it = all_cases().find(op);
  return it == all_cases().end() ? none : it->second;
}

}  // namespace opchain::harness
