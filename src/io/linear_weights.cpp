#include "io/linear_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "core/error.h"
#include "core/thread_pool.h"

namespace opchain {

namespace {

bool is_float_dtype(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Shapes that agree once dims of size 1 are dropped: [N, 1] and [N], [1] and [] (producers differ).
bool same_up_to_unit_dims(const Shape& a, const Shape& b) {
  std::vector<int64_t> x, y;
  for (int i = 0; i < a.ndim; ++i)
    if (a[i] != 1) x.push_back(a[i]);
  for (int i = 0; i < b.ndim; ++i)
    if (b[i] != 1) y.push_back(b[i]);
  return x == y;
}

std::string dtype_list(std::initializer_list<DType> ts) {
  std::string s;
  for (DType t : ts) s += (s.empty() ? "" : " or ") + std::string(dtype_name(t));
  return s;
}

const std::initializer_list<DType> kFloatTypes = {DType::F32, DType::BF16, DType::F16};

// One linear layer being read: its name, expected shape and the tensors around it.
struct Layer {
  const WeightStore& w;
  const std::string& module;
  int64_t out, in;

  const QuantConfig& qc() const { return w.quant_config(); }
  std::string name(const std::string& suffix) const { return module + "." + suffix; }
  bool has(const std::string& suffix) const { return w.contains(name(suffix)); }

  [[noreturn]] void fail(const std::string& suffix, const std::string& rule) const {
    const std::string n = name(suffix);
    throw FormatError("tensor '" + n + "' in " + w.file_of(n) + " " + rule);
  }

  // Tensor `suffix`, of one of `dtypes` and of `shape` (up to unit dims); `rule` states the layout.
  Tensor get(const std::string& suffix, std::initializer_list<DType> dtypes, const Shape& shape,
             const std::string& rule) const {
    const std::string n = name(suffix);
    if (!w.contains(n))
      throw FormatError(std::string(quant_method_name(qc().method)) + " checkpoint " + w.dir() + " has no tensor '" +
                        n + "' (" + rule + ")");
    Tensor t = w.get_any_shape(n);
    bool ok = false;
    for (DType d : dtypes) ok = ok || t.dtype() == d;
    if (!ok)
      fail(suffix,
           "has dtype " + std::string(dtype_name(t.dtype())) + ", expected " + dtype_list(dtypes) + " (" + rule + ")");
    if (!same_up_to_unit_dims(t.shape(), shape))
      fail(suffix, "has shape " + t.shape().str() + ", expected " + shape.str() + " (" + rule + ")");
    return t;
  }

  // A float tensor of any float dtype as f32 values, every one finite.
  std::vector<float> floats(const std::string& suffix, const Shape& shape, const std::string& rule) const {
    const Tensor t = get(suffix, kFloatTypes, shape, rule);
    std::vector<float> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = load_as_f32(t.raw(), t.dtype(), i);
      if (!std::isfinite(v[i]))
        fail(suffix, "holds a non-finite scale at element " + std::to_string(i) + " (" + rule + ")");
    }
    return v;
  }

  std::vector<int64_t> ints(const std::string& suffix, std::initializer_list<DType> dtypes, const Shape& shape,
                            const std::string& rule) const {
    const Tensor t = get(suffix, dtypes, shape, rule);
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) switch (t.dtype()) {
        case DType::I64:
          v[i] = t.data<int64_t>()[i];
          break;
        case DType::I32:
          v[i] = t.data<int32_t>()[i];
          break;
        case DType::I8:
          v[i] = t.data<int8_t>()[i];
          break;
        case DType::U8:
          v[i] = t.data<uint8_t>()[i];
          break;
        default:
          fail(suffix, "is not an integer tensor");
      }
    return v;
  }
};

Tensor f32_tensor(const std::vector<float>& v, const Shape& s) {
  Tensor t = Tensor::empty(DType::F32, s);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}

// [rows, cols] -> [cols, rows] (GPTQ and AWQ keep scales and zeros input-group major).
std::vector<float> transpose(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = v[static_cast<size_t>(r * cols + c)];
  return t;
}

// Zeros equal to the symmetric default (8 for int4) carry no information and slow the kernel.
void set_zeros(QuantParams& q, const std::vector<float>& zeros, const Shape& s, float symmetric_zero) {
  for (float z : zeros)
    if (z != symmetric_zero) {
      q.zeros = f32_tensor(zeros, s);
      return;
    }
}

// An act-order group map (none when it is k / group_size). Where every group holds group_size channels
// (the last what is left), as GPTQ's and llm-compressor's maps do, the code columns are sorted by group
// (stable, so each group keeps its channels' order) and the order kept in input_order; otherwise the map
// stays as group_of (Note [Quantised weights]).
void set_group_map(const Layer& L, QuantParams& q, Tensor& codes, const std::string& suffix, int64_t groups,
                   const std::string& rule) {
  if (!L.has(suffix)) return;
  const std::vector<int64_t> g = L.ints(suffix, {DType::I32, DType::I64}, {L.in}, rule);
  bool trivial = true;
  std::vector<int64_t> members(static_cast<size_t>(groups), 0);
  for (int64_t k = 0; k < L.in; ++k) {
    if (g[static_cast<size_t>(k)] < 0 || g[static_cast<size_t>(k)] >= groups)
      L.fail(suffix, "maps input channel " + std::to_string(k) + " to group " +
                         std::to_string(g[static_cast<size_t>(k)]) + ", outside the " + std::to_string(groups) +
                         " groups of its scales (" + rule + ")");
    trivial = trivial && g[static_cast<size_t>(k)] == k / q.group_size;
    ++members[static_cast<size_t>(g[static_cast<size_t>(k)])];
  }
  if (trivial) return;
  bool whole = true;
  for (int64_t gi = 0; gi < groups; ++gi)
    whole = whole && members[static_cast<size_t>(gi)] == std::min(q.group_size, L.in - gi * q.group_size);
  if (!whole) {
    q.group_of = Tensor::empty(DType::I32, {L.in});
    for (int64_t k = 0; k < L.in; ++k) q.group_of.data<int32_t>()[k] = static_cast<int32_t>(g[static_cast<size_t>(k)]);
    return;
  }
  q.input_order = Tensor::empty(DType::I32, {L.in});
  int32_t* order = q.input_order.data<int32_t>();
  std::vector<int64_t> next(static_cast<size_t>(groups));  // each group's next column
  for (int64_t gi = 0; gi < groups; ++gi) next[static_cast<size_t>(gi)] = gi * q.group_size;
  for (int64_t k = 0; k < L.in; ++k)
    order[next[static_cast<size_t>(g[static_cast<size_t>(k)])]++] = static_cast<int32_t>(k);
  const int64_t row_bytes = codes.size(1);
  Tensor sorted = Tensor::empty(DType::U8, codes.shape());
  const uint8_t* src = codes.data<uint8_t>();
  uint8_t* dst = sorted.data<uint8_t>();
  // Per row: the nibbles spread to bytes, gathered in the new order, packed again (loops the compiler
  // vectorises around the one gather, rather than a read-modify-write of a nibble per channel).
  ThreadPool::global().parallel_for(L.out, [&](int, int64_t o0, int64_t o1) {
    std::vector<uint8_t> spread(static_cast<size_t>(2 * row_bytes)), gathered(static_cast<size_t>(2 * row_bytes), 0);
    for (int64_t o = o0; o < o1; ++o) {
      const uint8_t* s = src + o * row_bytes;
      for (int64_t b = 0; b < row_bytes; ++b) {
        spread[static_cast<size_t>(2 * b)] = s[b] & 0xf;
        spread[static_cast<size_t>(2 * b + 1)] = s[b] >> 4;
      }
      for (int64_t j = 0; j < L.in; ++j) gathered[static_cast<size_t>(j)] = spread[static_cast<size_t>(order[j])];
      uint8_t* d = dst + o * row_bytes;
      for (int64_t b = 0; b < row_bytes; ++b)
        d[b] = static_cast<uint8_t>(gathered[static_cast<size_t>(2 * b)] |
                                    (gathered[static_cast<size_t>(2 * b + 1)] << 4));
    }
  });
  codes = sorted;
}

// Per-row scales of a block grid [ceil(out / bn), ceil(in / bk)]: each row carries its block row's.
std::vector<float> expand_block_rows(const std::vector<float>& grid, int64_t out, int64_t bn, int64_t grid_cols) {
  std::vector<float> s(static_cast<size_t>(out * grid_cols));
  for (int64_t o = 0; o < out; ++o)
    std::memcpy(&s[static_cast<size_t>(o * grid_cols)], &grid[static_cast<size_t>((o / bn) * grid_cols)],
                static_cast<size_t>(grid_cols) * sizeof(float));
  return s;
}

// ---- fp8 (DeepSeek-V3 / Qwen3-FP8 block scales, or one scale per tensor) ----------------------------

Weight fp8_linear(const Layer& L) {
  const QuantConfig& c = L.qc();
  Tensor codes = L.get("weight", {DType::F8E4M3}, {L.out, L.in}, "fp8: weight is F8_E4M3 [out, in]");
  auto q = std::make_shared<QuantParams>();
  q->in_features = L.in;
  q->act = ActQuant::Fp8Group;
  if (c.block_n > 0) {
    const int64_t gr = cdiv(L.out, c.block_n), gc = cdiv(L.in, c.block_k);
    const std::string sn = L.has("weight_scale_inv") || !L.has("weight_scale") ? "weight_scale_inv" : "weight_scale";
    const std::string rule = "fp8 with weight_block_size [" + std::to_string(c.block_n) + ", " +
                             std::to_string(c.block_k) + "]: " + sn +
                             " holds one scale per block, [ceil(out / block_n), ceil(in / block_k)]";
    q->scheme = QuantScheme::Fp8Block;
    q->group_size = c.block_k;
    q->act_group = c.block_k;
    q->scales = f32_tensor(expand_block_rows(L.floats(sn, {gr, gc}, rule), L.out, c.block_n, gc), {L.out, gc});
  } else {
    const std::string sn = L.has("weight_scale") ? "weight_scale" : "weight_scale_inv";
    const float s = L.floats(sn, {1}, "per-tensor fp8: " + sn + " is one scale")[0];
    q->scheme = QuantScheme::Fp8Channel;
    q->act_group = L.in;  // dynamic activations: one scale per token
    q->scales = f32_tensor(std::vector<float>(static_cast<size_t>(L.out), s), {L.out, 1});
  }
  return Weight(codes, q);
}

// ---- GPTQ (AutoGPTQ / GPTQModel, 4-bit, v1 and v2) -------------------------------------------------

Weight gptq_linear(const Layer& L) {
  const QuantConfig& c = L.qc();
  const int64_t gs = c.group_size == -1 ? L.in : c.group_size, groups = cdiv(L.in, gs);
  if (L.in % 8 != 0)
    L.fail("qweight", "belongs to a layer of " + std::to_string(L.in) +
                          " input channels; GPTQ packs 8 along the input, so it must be a multiple of 8");
  if (L.out % 8 != 0)
    L.fail("qzeros", "belongs to a layer of " + std::to_string(L.out) +
                         " output channels; GPTQ packs zeros 8 along the output, so it must be a multiple of 8");
  const std::string g = "group_size " + std::to_string(gs) + ", so " + std::to_string(groups) + " groups";
  const Tensor qweight = L.get("qweight", {DType::I32}, {L.in / 8, L.out},
                               "gptq: qweight int32 [in / 8, out], eight 4-bit codes along the input per word");
  const std::vector<int64_t> qzeros =
      L.ints("qzeros", {DType::I32}, {groups, L.out / 8}, "gptq: qzeros int32 [groups, out / 8]; " + g);
  const std::vector<float> scales = L.floats("scales", {groups, L.out}, "gptq: scales [groups, out]; " + g);

  auto q = std::make_shared<QuantParams>();
  q->scheme = QuantScheme::Int4Group;
  q->in_features = L.in;
  q->group_size = gs;
  // Word r of column o holds input channels 8r..8r+7, lowest bits first: in little-endian memory those
  // are exactly the 4 bytes of codes row o at 4r (two channels per byte, the even one low).
  Tensor codes = Tensor::empty(DType::U8, {L.out, L.in / 2});
  const uint32_t* src = qweight.data<uint32_t>();
  uint8_t* dst = codes.data<uint8_t>();
  ThreadPool::global().parallel_for(L.out, [&](int, int64_t o0, int64_t o1) {
    for (int64_t r = 0; r < L.in / 8; ++r)
      for (int64_t o = o0; o < o1; ++o) std::memcpy(dst + o * (L.in / 2) + 4 * r, src + r * L.out + o, 4);
  });
  q->scales = f32_tensor(transpose(scales, groups, L.out), {L.out, groups});
  // v1 (AutoGPTQ's pack) stores zero - 1, v2 the zero itself.
  std::vector<float> zeros(static_cast<size_t>(L.out * groups));
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t o = 0; o < L.out; ++o) {
      const uint32_t word = static_cast<uint32_t>(qzeros[static_cast<size_t>(gi * (L.out / 8) + o / 8)]);
      zeros[static_cast<size_t>(o * groups + gi)] =
          static_cast<float>(((word >> (4 * (o % 8))) & 0xf) + (c.gptq_v2 ? 0 : 1));
    }
  set_zeros(*q, zeros, {L.out, groups}, 8.0f);
  set_group_map(L, *q, codes, "g_idx", groups, "gptq: g_idx int32 [in], each input channel's group");
  L.w.release(L.name("qweight"));  // converted: the mapping's copy need not stay resident
  return Weight(codes, q);
}

// ---- AWQ (AutoAWQ's GEMM layout) -------------------------------------------------------------------

// Output channel 8c + j sits in nibble kAwqNibble[j] of word c (AutoAWQ packs in order 0 2 4 6 1 3 5 7).
constexpr int kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

Weight awq_linear(const Layer& L) {
  const QuantConfig& c = L.qc();
  const int64_t gs = c.group_size == -1 ? L.in : c.group_size, groups = cdiv(L.in, gs);
  if (L.out % 8 != 0)
    L.fail("qweight", "belongs to a layer of " + std::to_string(L.out) +
                          " output channels; AWQ packs 8 along the output, so it must be a multiple of 8");
  const std::string g = "group_size " + std::to_string(gs) + ", so " + std::to_string(groups) + " groups";
  const Tensor qweight = L.get("qweight", {DType::I32}, {L.in, L.out / 8},
                               "awq gemm: qweight int32 [in, out / 8], eight 4-bit codes along the output per word");
  const std::vector<float> scales = L.floats("scales", {groups, L.out}, "awq: scales [groups, out]; " + g);

  auto q = std::make_shared<QuantParams>();
  q->scheme = QuantScheme::Int4Group;
  q->in_features = L.in;
  q->group_size = gs;
  const int64_t row_bytes = cdiv(L.in, 2);
  Tensor codes = Tensor::empty(DType::U8, {L.out, row_bytes});
  std::memset(codes.raw(), 0, codes.nbytes());
  const uint32_t* src = qweight.data<uint32_t>();
  uint8_t* dst = codes.data<uint8_t>();
  ThreadPool::global().parallel_for(
      L.out / 8, [&](int, int64_t c0, int64_t c1) {  // each word column fills its own 8 rows
        for (int64_t k = 0; k < L.in; ++k)
          for (int64_t cw = c0; cw < c1; ++cw) {
            const uint32_t word = src[k * (L.out / 8) + cw];
            for (int j = 0; j < 8; ++j)
              dst[(8 * cw + j) * row_bytes + k / 2] |=
                  static_cast<uint8_t>(((word >> (4 * kAwqNibble[j])) & 0xf) << (4 * (k & 1)));
          }
      });
  q->scales = f32_tensor(transpose(scales, groups, L.out), {L.out, groups});
  if (L.has("qzeros") || c.zero_point) {  // zeros are stored as they are, in the same nibble order
    const std::vector<int64_t> qz =
        L.ints("qzeros", {DType::I32}, {groups, L.out / 8}, "awq: qzeros int32 [groups, out / 8]; " + g);
    std::vector<float> zeros(static_cast<size_t>(L.out * groups));
    for (int64_t gi = 0; gi < groups; ++gi)
      for (int64_t o = 0; o < L.out; ++o) {
        const uint32_t word = static_cast<uint32_t>(qz[static_cast<size_t>(gi * (L.out / 8) + o / 8)]);
        zeros[static_cast<size_t>(o * groups + gi)] = static_cast<float>((word >> (4 * kAwqNibble[o % 8])) & 0xf);
      }
    set_zeros(*q, zeros, {L.out, groups}, 8.0f);
  }
  L.w.release(L.name("qweight"));
  return Weight(codes, q);
}

// ---- compressed-tensors (llm-compressor) -----------------------------------------------------------

ActQuant ct_act(const CtScheme& s, int64_t in, int64_t& act_group) {
  act_group = 0;
  if (!s.input_activations) return ActQuant::None;
  const CtArgs& a = *s.input_activations;
  if (!a.is_float) return ActQuant::Int8Token;
  act_group = a.strategy == "group" && a.group_size > 0 ? a.group_size : in;
  return ActQuant::Fp8Group;
}

// Scales of an int or float scheme with strategy tensor / channel / group / block, as [out, groups].
std::vector<float> ct_scales(const Layer& L, const CtArgs& a, int64_t& groups, int64_t& group_size) {
  const std::string rule = "compressed-tensors " + a.strategy + " strategy: weight_scale ";
  if (a.strategy == "tensor") {
    groups = 1;
    group_size = L.in;
    return std::vector<float>(static_cast<size_t>(L.out), L.floats("weight_scale", {1}, rule + "is one scale")[0]);
  }
  if (a.strategy == "channel") {
    groups = 1;
    group_size = L.in;
    return L.floats("weight_scale", {L.out, 1}, rule + "is [out, 1]");
  }
  if (a.strategy == "group") {
    groups = cdiv(L.in, a.group_size);
    group_size = a.group_size;
    return L.floats("weight_scale", {L.out, groups},
                    rule + "is [out, ceil(in / group_size)] with group_size " + std::to_string(a.group_size));
  }
  // block
  if (a.block_rows <= 0 || a.block_cols <= 0)
    L.fail("weight_scale", "belongs to a block scheme without a positive block_structure");
  const int64_t gr = cdiv(L.out, a.block_rows);
  groups = cdiv(L.in, a.block_cols);
  group_size = a.block_cols;
  return expand_block_rows(L.floats("weight_scale", {gr, groups},
                                    rule + "is [ceil(out / rows), ceil(in / cols)] of block_structure [" +
                                        std::to_string(a.block_rows) + ", " + std::to_string(a.block_cols) + "]"),
                           L.out, a.block_rows, groups);
}

Weight ct_linear(const Layer& L, const CtScheme& s) {
  const CtArgs& a = *s.weights;
  auto q = std::make_shared<QuantParams>();
  q->in_features = L.in;
  q->act = ct_act(s, L.in, q->act_group);
  int64_t groups = 1, gs = L.in;
  const std::vector<float> scales = ct_scales(L, a, groups, gs);
  q->group_size = gs;
  q->scales = f32_tensor(scales, {L.out, groups});
  const bool packed = s.format == "pack-quantized";
  if (packed && a.is_float)
    L.fail("weight_packed", "is under a pack-quantized scheme with float weights; pack-quantized holds int weights");

  if (a.is_float) {  // float-quantized: F8_E4M3 weight
    Tensor codes =
        L.get("weight", {DType::F8E4M3}, {L.out, L.in}, "compressed-tensors float-quantized: weight F8_E4M3 [out, in]");
    q->scheme = a.strategy == "block" ? QuantScheme::Fp8Block : QuantScheme::Fp8Channel;
    if (q->scheme == QuantScheme::Fp8Channel) q->group_size = 0;
    return Weight(codes, q);
  }

  // Int codes, signed in [-2^(b-1), 2^(b-1)): int-/naive-quantized store them as int8; pack-quantized adds
  // 2^(b-1) and packs them lowest bits first along the input, as does the zero point along the output.
  const int bits = a.bits;
  const int per_word = 32 / bits;
  const int64_t offset = int64_t{1} << (bits - 1);
  std::vector<int64_t> codes_u;  // unsigned (offset) codes, [out, in]
  if (packed) {
    const std::vector<int64_t> shape = L.ints("weight_shape", {DType::I64, DType::I32}, {2},
                                              "compressed-tensors pack-quantized: weight_shape is [out, in]");
    if (shape[0] != L.out || shape[1] != L.in)
      L.fail("weight_shape", "says [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                                 "] but the model expects [" + std::to_string(L.out) + ", " + std::to_string(L.in) +
                                 "]");
    const Tensor p = L.get(
        "weight_packed", {DType::I32}, {L.out, cdiv(L.in, per_word)},
        "compressed-tensors pack-quantized: weight_packed int32 [out, ceil(in / " + std::to_string(per_word) + ")]");
    if (bits == 4) {  // the canonical int4 layout already: copy the rows' leading bytes
      const int64_t rb = cdiv(L.in, 2), src_rb = cdiv(L.in, per_word) * 4;
      Tensor codes = Tensor::empty(DType::U8, {L.out, rb});
      for (int64_t o = 0; o < L.out; ++o)
        std::memcpy(codes.data<uint8_t>() + o * rb, p.data<uint8_t>() + o * src_rb, static_cast<size_t>(rb));
      if (L.in % 2)  // the padding nibble of an odd row is never read; keep it zero for reproducible files
        for (int64_t o = 0; o < L.out; ++o) codes.data<uint8_t>()[o * rb + rb - 1] &= 0x0f;
      q->scheme = QuantScheme::Int4Group;
      if (L.has("weight_zero_point") || !a.symmetric) {
        const std::vector<int64_t> zp = L.ints("weight_zero_point", {DType::I32}, {cdiv(L.out, per_word), groups},
                                               "compressed-tensors pack-quantized: weight_zero_point int32 [ceil(out / "
                                               "8), groups], packed along the output");
        std::vector<float> zeros(static_cast<size_t>(L.out * groups));
        for (int64_t o = 0; o < L.out; ++o)
          for (int64_t gi = 0; gi < groups; ++gi)
            zeros[static_cast<size_t>(o * groups + gi)] = static_cast<float>(
                (static_cast<uint32_t>(zp[static_cast<size_t>((o / 8) * groups + gi)]) >> (4 * (o % 8))) & 0xf);
        set_zeros(*q, zeros, {L.out, groups}, 8.0f);
      }
      set_group_map(L, *q, codes, "weight_g_idx", groups,
                    "compressed-tensors: weight_g_idx int32 [in], each input channel's group");
      L.w.release(L.name("weight_packed"));
      return Weight(codes, q);
    }
    codes_u.resize(static_cast<size_t>(L.out * L.in));
    const int64_t words = cdiv(L.in, per_word);
    for (int64_t o = 0; o < L.out; ++o)
      for (int64_t k = 0; k < L.in; ++k)
        codes_u[static_cast<size_t>(o * L.in + k)] =
            (p.data<uint32_t>()[o * words + k / per_word] >> (bits * (k % per_word))) & ((1u << bits) - 1);
  } else {
    const Tensor t =
        L.get("weight", {DType::I8}, {L.out, L.in}, "compressed-tensors int-quantized: weight int8 [out, in]");
    if (bits == 8) {  // already the canonical int8 codes: used in place from the mapping
      q->scheme = QuantScheme::Int8Channel;
      q->group_size = 0;
      if (L.has("weight_zero_point") || !a.symmetric) {
        const std::vector<int64_t> zp = L.ints("weight_zero_point", {DType::I8, DType::I32}, {L.out, 1},
                                               "compressed-tensors: weight_zero_point [out, 1]");
        std::vector<float> zeros(zp.begin(), zp.end());
        set_zeros(*q, zeros, {L.out, 1}, 0.0f);
      }
      return Weight(t, q);
    }
    codes_u.resize(static_cast<size_t>(L.out * L.in));
    for (int64_t i = 0; i < L.out * L.in; ++i) {
      const int64_t v = t.data<int8_t>()[i];
      if (v < -offset || v >= offset)
        L.fail("weight", "holds " + std::to_string(v) + " at element " + std::to_string(i) + ", outside the " +
                             std::to_string(bits) + "-bit range");
      codes_u[static_cast<size_t>(i)] = v + offset;
    }
  }
  // Zero points in the signed domain (stored plainly) or packed with the offset.
  std::vector<float> zeros;
  if (L.has("weight_zero_point") || !a.symmetric) {
    zeros.resize(static_cast<size_t>(L.out * groups));
    if (packed) {
      const std::vector<int64_t> zp =
          L.ints("weight_zero_point", {DType::I32}, {cdiv(L.out, per_word), groups},
                 "compressed-tensors pack-quantized: weight_zero_point int32 packed along the output");
      for (int64_t o = 0; o < L.out; ++o)
        for (int64_t gi = 0; gi < groups; ++gi)
          zeros[static_cast<size_t>(o * groups + gi)] =
              static_cast<float>(((static_cast<uint32_t>(zp[static_cast<size_t>((o / per_word) * groups + gi)]) >>
                                   (bits * (o % per_word))) &
                                  ((1u << bits) - 1)) -
                                 offset);
    } else {
      const std::vector<int64_t> zp = L.ints("weight_zero_point", {DType::I8, DType::I32}, {L.out, groups},
                                             "compressed-tensors: weight_zero_point [out, groups]");
      for (size_t i = 0; i < zeros.size(); ++i) zeros[i] = static_cast<float>(zp[i]);
    }
  }
  if (bits == 8) {  // Int8Channel: signed codes
    q->scheme = QuantScheme::Int8Channel;
    q->group_size = 0;
    Tensor codes = Tensor::empty(DType::I8, {L.out, L.in});
    for (size_t i = 0; i < codes_u.size(); ++i) codes.data<int8_t>()[i] = static_cast<int8_t>(codes_u[i] - offset);
    if (!zeros.empty()) set_zeros(*q, zeros, {L.out, 1}, 0.0f);
    return Weight(codes, q);
  }
  // 4-bit naive (one int8 per code): into the canonical nibbles, zeros moved by the same offset.
  q->scheme = QuantScheme::Int4Group;
  const int64_t rb = cdiv(L.in, 2);
  Tensor codes = Tensor::empty(DType::U8, {L.out, rb});
  std::memset(codes.raw(), 0, codes.nbytes());
  for (int64_t o = 0; o < L.out; ++o)
    for (int64_t k = 0; k < L.in; ++k)
      codes.data<uint8_t>()[o * rb + k / 2] |=
          static_cast<uint8_t>(codes_u[static_cast<size_t>(o * L.in + k)] << (4 * (k & 1)));
  for (float& z : zeros) z += static_cast<float>(offset);
  if (!zeros.empty()) set_zeros(*q, zeros, {L.out, groups}, 8.0f);
  set_group_map(L, *q, codes, "weight_g_idx", groups,
                "compressed-tensors: weight_g_idx int32 [in], each input channel's group");
  return Weight(codes, q);
}

}  // namespace

Weight load_linear(const WeightStore& w, const std::string& module, int64_t out, int64_t in) {
  const QuantConfig& c = w.quant_config();
  const std::string wn = module + ".weight";
  if (w.contains(wn) && is_float_dtype(w.get_any_shape(wn).dtype())) return Weight(w.get(wn, {out, in}));
  if (!c.quantized()) {
    if (w.contains(wn))
      throw FormatError("tensor '" + wn + "' in " + w.file_of(wn) + " has dtype " +
                        std::string(dtype_name(w.get_any_shape(wn).dtype())) + ", but " + w.dir() +
                        "/config.json has no quantization_config saying how to read it");
    if (w.contains(module + ".qweight") || w.contains(module + ".weight_packed"))
      throw FormatError("layer '" + module + "' in " + w.dir() + " is stored quantised (" + module +
                        (w.contains(module + ".qweight") ? ".qweight" : ".weight_packed") +
                        "), but config.json has no quantization_config");
    return Weight(w.get(wn, {out, in}));  // the missing-tensor error
  }
  if (c.excludes(module))
    throw FormatError("layer '" + module + "' is left unquantised by " + c.source + " (" + quant_method_name(c.method) +
                      " exclusion list), but " + w.dir() + " has no float tensor '" + wn + "' for it");
  const Layer L{w, module, out, in};
  switch (c.method) {
    case QuantMethod::Fp8:
      return fp8_linear(L);
    case QuantMethod::Gptq:
      return gptq_linear(L);
    case QuantMethod::Awq:
      return awq_linear(L);
    case QuantMethod::CompressedTensors: {
      const CtScheme* s = c.scheme_for(module);
      if (!s)
        throw FormatError("layer '" + module + "' matches no config group's targets in " + c.source + ", but " +
                          w.dir() + " has no float tensor '" + wn + "' for it");
      return ct_linear(L, *s);
    }
    case QuantMethod::None:
      break;
  }
  return Weight(w.get(wn, {out, in}));
}

Weight load_linear_rows(const WeightStore& w, const std::string& module, int64_t out, int64_t in,
                        const std::vector<WeightStore::RowRange>& ranges) {
  const Weight full = load_linear(w, module, out, in);
  for (const auto& [b, e] : ranges)
    if (b < 0 || e < b || e > out)
      throw FormatError("layer '" + module + "' in " + w.dir() + ": row range [" + std::to_string(b) + ", " +
                        std::to_string(e) + ") is outside its " + std::to_string(out) + " rows");
  return select_rows(full, ranges);
}

Weight load_linear_stacked(const WeightStore& w, const std::vector<std::string>& modules,
                           const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  std::vector<Weight> parts;
  for (size_t i = 0; i < modules.size(); ++i) {
    parts.push_back(load_linear(w, modules[i], shapes[i].first, shapes[i].second));
    if (parts.back().quantized() != parts.front().quantized() || parts.back().dtype() != parts.front().dtype())
      throw FormatError("layer '" + modules[i] + "' in " + w.dir() + " is stored as " + parts.back().desc() + " but '" +
                        modules[0] + "', which the engine stacks it with, as " + parts.front().desc() +
                        "; both must be stored alike");
  }
  try {
    return stack_rows(parts);
  } catch (const FormatError& e) {
    // GPTQ derives act-order from the layer's input, so layers reading one input share their g_idx.
    throw FormatError(
        "layers '" + modules[0] + "' and the ones stacked with it in " + w.dir() + ": " + e.what() +
        " (layers that read the same input run as one matmul, so their scales must cover the same input groups)");
  }
}

std::vector<Weight> load_fused_experts(const WeightStore& w, const std::string& name, int64_t experts, int64_t rows,
                                       int64_t cols) {
  std::vector<Weight> out;
  const Tensor any = w.get_any_shape(name);
  if (is_float_dtype(any.dtype())) {
    const Tensor t = w.get(name, {experts, rows, cols});
    for (int64_t i = 0; i < experts; ++i) out.emplace_back(t.slice_rows(i, i + 1).reshape({rows, cols}));
    return out;
  }
  const QuantConfig& c = w.quant_config();
  if (any.dtype() != DType::F8E4M3 || c.method != QuantMethod::Fp8)
    throw FormatError("tensor '" + name + "' in " + w.file_of(name) + " has dtype " +
                      std::string(dtype_name(any.dtype())) +
                      "; fused expert tensors are read dense or as fp8 (quant_method fp8), and " + w.dir() +
                      "'s config says " + quant_method_name(c.method));
  if (!(any.shape() == Shape{experts, rows, cols}))
    throw FormatError("tensor '" + name + "' in " + w.file_of(name) + " has shape " + any.shape().str() +
                      ", expected " + Shape{experts, rows, cols}.str());
  const std::string sn = name + "_scale_inv";
  if (!w.contains(sn))
    throw FormatError("fp8 checkpoint " + w.dir() + " has no tensor '" + sn + "' (the scales of fused experts '" +
                      name + "')");
  const Tensor st = w.get_any_shape(sn);
  if (!is_float_dtype(st.dtype()))
    throw FormatError("tensor '" + sn + "' in " + w.file_of(sn) + " has dtype " + std::string(dtype_name(st.dtype())) +
                      ", expected f32, bf16 or f16");
  const bool block = c.block_n > 0;
  const int64_t gr = block ? cdiv(rows, c.block_n) : 1, gc = block ? cdiv(cols, c.block_k) : 1;
  if (st.numel() != experts * gr * gc)
    throw FormatError("tensor '" + sn + "' in " + w.file_of(sn) + " has shape " + st.shape().str() + ", expected " +
                      Shape{experts, gr, gc}.str() +
                      (block ? " (one scale per expert and [block_n, block_k] block)" : " (one scale per expert)"));
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<float> grid(static_cast<size_t>(gr * gc));
    for (size_t i = 0; i < grid.size(); ++i) {
      grid[i] = load_as_f32(st.raw(), st.dtype(), static_cast<size_t>(e * gr * gc) + i);
      if (!std::isfinite(grid[i]))
        throw FormatError("tensor '" + sn + "' in " + w.file_of(sn) + " holds a non-finite scale for expert " +
                          std::to_string(e));
    }
    auto q = std::make_shared<QuantParams>();
    q->in_features = cols;
    q->act = ActQuant::Fp8Group;
    if (block) {
      q->scheme = QuantScheme::Fp8Block;
      q->group_size = c.block_k;
      q->act_group = c.block_k;
      q->scales = f32_tensor(expand_block_rows(grid, rows, c.block_n, gc), {rows, gc});
    } else {
      q->scheme = QuantScheme::Fp8Channel;
      q->act_group = cols;
      q->scales = f32_tensor(std::vector<float>(static_cast<size_t>(rows), grid[0]), {rows, 1});
    }
    out.emplace_back(any.slice_rows(e, e + 1).reshape({rows, cols}), q);
  }
  return out;
}

int64_t parameter_count(const WeightStore& w, const std::string& name) {
  static const char* const kParams[] = {".qzeros",       ".scales",           ".g_idx",
                                        ".weight_scale", ".weight_scale_inv", ".weight_zero_point",
                                        ".weight_shape", ".weight_g_idx",     "_scale_inv"};
  auto ends = [&](const char* t) {
    const size_t n = std::strlen(t);
    return name.size() >= n && name.compare(name.size() - n, n, t) == 0;
  };
  const int64_t n = w.entry(name).shape.numel();
  if (!w.quant_config().quantized()) return n;
  for (const char* t : kParams)
    if (ends(t)) return 0;
  if (ends(".qweight") || ends(".weight_packed")) return 8 * n;
  return n;
}

std::string describe_weights(const WeightStore& w) {
  const std::string dense(dtype_name(w.dominant_dtype()));
  const QuantConfig& c = w.quant_config();
  if (!c.quantized()) return dense;
  std::string what = quant_method_name(c.method);
  if (c.method == QuantMethod::Fp8)
    what += c.block_n > 0 ? " block " + std::to_string(c.block_n) + "x" + std::to_string(c.block_k) : " per tensor";
  if (c.method == QuantMethod::Gptq || c.method == QuantMethod::Awq)
    what += " int4 group " + std::to_string(c.group_size);
  if (c.method == QuantMethod::CompressedTensors) what += " " + c.format;
  return what;
}

}  // namespace opchain
