#include "io/quant_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/thread_pool.h"

namespace opchain {

using nlohmann::json;

std::optional<QuantFormat> parse_quant_format(std::string_view s) {
  if (s == "fp8-block") return QuantFormat::Fp8Block;
  if (s == "gptq") return QuantFormat::Gptq;
  if (s == "awq") return QuantFormat::Awq;
  if (s == "w8a8") return QuantFormat::W8A8;
  if (s == "w4a16") return QuantFormat::W4A16;
  return std::nullopt;
}

const char* quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::Fp8Block:
      return "fp8-block";
    case QuantFormat::Gptq:
      return "gptq";
    case QuantFormat::Awq:
      return "awq";
    case QuantFormat::W8A8:
      return "w8a8";
    case QuantFormat::W4A16:
      return "w4a16";
  }
  return "?";
}

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool uses_groups(QuantFormat f) { return f == QuantFormat::Gptq || f == QuantFormat::Awq || f == QuantFormat::W4A16; }

void check_options(const QuantFormatOptions& o) {
  if (uses_groups(o.format) && o.group_size != -1 && o.group_size <= 0)
    throw InvalidArgumentError(std::string(quant_format_name(o.format)) + ": group_size must be positive or -1, got " +
                               std::to_string(o.group_size));
  if (o.lm_head && o.format == QuantFormat::Awq)
    throw InvalidArgumentError(
        "awq: AutoAWQ never quantises lm_head, and AWQ readers do not expect it; use gptq or w4a16");
  if (o.format == QuantFormat::Fp8Block && (o.block_n <= 0 || o.block_k <= 0))
    throw InvalidArgumentError("fp8-block: block sizes must be positive, got " + std::to_string(o.block_n) + "x" +
                               std::to_string(o.block_k));
}

// Input channels per group; formats without groups (and -1) have one group per row.
int64_t group_width(const QuantFormatOptions& o, int64_t in) {
  return uses_groups(o.format) && o.group_size > 0 ? o.group_size : in;
}

// A scale as the file will hold it, so that codes are computed against the value a reader sees.
float stored(float x, DType t) {
  if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(x));
  if (t == DType::F16) return f16_to_f32(f32_to_f16(x));
  return x;
}

Tensor float_tensor(const std::vector<float>& v, const Shape& s, DType t) {
  Tensor out = Tensor::empty(t, s);
  for (size_t i = 0; i < v.size(); ++i) switch (t) {
      case DType::F32:
        out.data<float>()[i] = v[i];
        break;
      case DType::BF16:
        out.data<uint16_t>()[i] = f32_to_bf16(v[i]);
        break;
      case DType::F16:
        out.data<uint16_t>()[i] = f32_to_f16(v[i]);
        break;
      default:
        throw InvalidArgumentError("scales are stored as f32, bf16 or f16, not " + std::string(dtype_name(t)));
    }
  return out;
}

Tensor int32_tensor(const std::vector<uint32_t>& v, const Shape& s) {
  Tensor out = Tensor::empty(DType::I32, s);
  std::memcpy(out.raw(), v.data(), v.size() * 4);
  return out;
}

float round_even(float x) { return std::nearbyint(x); }

// f(r) for every output row, rows split over the global pool (each row's codes and parameters are its own).
template <class F>
void for_rows(int64_t out, const F& f) {
  ThreadPool::global().parallel_for(out, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) f(r);
  });
}

// Each input channel's group: k / group_size, or with act-order the channel's position in a processing
// order divided by group_size. GPTQ orders channels by its Hessian's diagonal, which it computes from the
// layer's input, so layers that read the same input (q/k/v, gate/up) get the same g_idx. Round to nearest
// has no Hessian: it uses a fixed pseudo-random order per input width, which keeps that property.
std::vector<int32_t> group_map(int64_t in, int64_t gs, bool act_order) {
  std::vector<int32_t> g(static_cast<size_t>(in));
  if (!act_order) {
    for (int64_t k = 0; k < in; ++k) g[static_cast<size_t>(k)] = static_cast<int32_t>(k / gs);
    return g;
  }
  std::vector<int64_t> order(static_cast<size_t>(in));
  std::iota(order.begin(), order.end(), 0);
  uint64_t state = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(in);
  for (int64_t i = in - 1; i > 0; --i) {  // Fisher-Yates with a 64-bit LCG
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>((state >> 33) % static_cast<uint64_t>(i + 1))]);
  }
  for (int64_t p = 0; p < in; ++p) g[static_cast<size_t>(order[static_cast<size_t>(p)])] = static_cast<int32_t>(p / gs);
  return g;
}

std::vector<std::vector<int64_t>> group_members(const std::vector<int32_t>& g, int64_t groups) {
  std::vector<std::vector<int64_t>> m(static_cast<size_t>(groups));
  for (size_t k = 0; k < g.size(); ++k) m[static_cast<size_t>(g[k])].push_back(static_cast<int64_t>(k));
  return m;
}

// ---- fp8 blocks (DeepSeek-V3's recipe: scale = amax / 448 per block, codes e4m3 of w / scale) ----

void fp8_block_quantize(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in, uint8_t* codes,
                        std::vector<float>& grid) {
  const int64_t gr = cdiv(out, o.block_n), gc = cdiv(in, o.block_k);
  grid.assign(static_cast<size_t>(gr * gc), 0.0f);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k) {
      float& a = grid[static_cast<size_t>((r / o.block_n) * gc + k / o.block_k)];
      a = std::max(a, std::fabs(w[r * in + k]));
    }
  for (float& s : grid) s = stored(s > 0.0f ? s / 448.0f : 1.0f, o.scale_dtype);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k) {
      const float s = grid[static_cast<size_t>((r / o.block_n) * gc + k / o.block_k)];
      codes[r * in + k] = f32_to_f8e4m3(std::clamp(w[r * in + k] / s, -448.0f, 448.0f));
    }
}

std::vector<Tensor> fp8_block(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  Tensor codes = Tensor::empty(DType::F8E4M3, {out, in});
  std::vector<float> grid;
  fp8_block_quantize(o, w, out, in, codes.data<uint8_t>(), grid);
  return {codes, float_tensor(grid, {cdiv(out, o.block_n), cdiv(in, o.block_k)}, o.scale_dtype)};
}

// ---- GPTQ (AutoGPTQ's Quantizer and QuantLinear.pack, 4 bits) ----

std::vector<Tensor> gptq(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  const int64_t gs = group_width(o, in), groups = cdiv(in, gs);
  const std::vector<int32_t> g = group_map(in, gs, o.act_order);
  const auto members = group_members(g, groups);
  std::vector<float> scales(static_cast<size_t>(groups * out));
  std::vector<int> zeros(static_cast<size_t>(groups * out));
  std::vector<uint8_t> q(static_cast<size_t>(out * in));
  for_rows(out, [&](int64_t r) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const auto& ks = members[static_cast<size_t>(gi)];
      float lo = 0.0f, hi = 0.0f;  // the range always includes 0
      for (int64_t k : ks) {
        lo = std::min(lo, w[r * in + k]);
        hi = std::max(hi, w[r * in + k]);
      }
      float scale;
      int zero;
      if (o.symmetric) {
        const float amax = std::max(-lo, hi);
        scale = amax > 0.0f ? 2.0f * amax / 15.0f : 1.0f;
        zero = 8;
      } else {
        if (lo == 0.0f && hi == 0.0f) lo = -1.0f, hi = 1.0f;
        scale = (hi - lo) / 15.0f;
        zero = static_cast<int>(round_even(-lo / scale));
        // v1 stores zero - 1 and cannot hold a zero of 0 (docs/quantization.md): such a group (all its
        // weights >= 0) uses zero 1 with the scale that maps its largest weight to 15.
        if (zero == 0 && !o.gptq_v2) {
          zero = 1;
          scale = hi / 14.0f;
        }
      }
      scale = stored(scale, o.scale_dtype);
      scales[static_cast<size_t>(gi * out + r)] = scale;
      zeros[static_cast<size_t>(gi * out + r)] = zero;
      for (int64_t k : ks)
        q[static_cast<size_t>(r * in + k)] =
            static_cast<uint8_t>(std::clamp(round_even(w[r * in + k] / scale) + zero, 0.0f, 15.0f));
    }
  });
  std::vector<uint32_t> qweight(static_cast<size_t>((in / 8) * out), 0),
      qzeros(static_cast<size_t>(groups * (out / 8)), 0);
  for (int64_t rw = 0; rw < in / 8; ++rw)
    for (int64_t r = 0; r < out; ++r)
      for (int j = 0; j < 8; ++j)
        qweight[static_cast<size_t>(rw * out + r)] |= static_cast<uint32_t>(q[static_cast<size_t>(r * in + 8 * rw + j)])
                                                      << (4 * j);
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t r = 0; r < out; ++r) {
      const int z = zeros[static_cast<size_t>(gi * out + r)] - (o.gptq_v2 ? 0 : 1);
      qzeros[static_cast<size_t>(gi * (out / 8) + r / 8)] |= static_cast<uint32_t>(z & 0xf) << (4 * (r % 8));
    }
  Tensor g_idx = Tensor::empty(DType::I32, {in});
  std::memcpy(g_idx.raw(), g.data(), g.size() * 4);
  return {int32_tensor(qweight, {in / 8, out}), int32_tensor(qzeros, {groups, out / 8}),
          float_tensor(scales, {groups, out}, o.scale_dtype), g_idx};
}

// ---- AWQ (AutoAWQ's pseudo_quantize_tensor and WQLinear_GEMM.from_linear) ----

// Nibble i of a word holds output channel 8c + kAwqOrder[i].
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

std::vector<Tensor> awq(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  const int64_t gs = group_width(o, in), groups = in / gs;
  std::vector<float> scales(static_cast<size_t>(groups * out));
  std::vector<int> zeros(static_cast<size_t>(groups * out), 8);
  std::vector<uint8_t> q(static_cast<size_t>(out * in));
  for_rows(out, [&](int64_t r) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float* row = w + r * in + gi * gs;
      float lo = row[0], hi = row[0];
      for (int64_t k = 1; k < gs; ++k) lo = std::min(lo, row[k]), hi = std::max(hi, row[k]);
      float scale;
      int zero = 8;
      if (o.symmetric) {  // zero_point false: signed codes in [-8, 7], stored with 8 added
        const float amax = std::max(-lo, hi);
        scale = stored(amax > 0.0f ? amax / 7.0f : 1.0f, o.scale_dtype);
        for (int64_t k = 0; k < gs; ++k)
          q[static_cast<size_t>(r * in + gi * gs + k)] =
              static_cast<uint8_t>(std::clamp(round_even(row[k] / scale), -8.0f, 7.0f) + 8.0f);
      } else {
        scale = stored(std::max(hi - lo, 1e-5f) / 15.0f, o.scale_dtype);
        zero = static_cast<int>(std::clamp(-round_even(lo / scale), 0.0f, 15.0f));
        for (int64_t k = 0; k < gs; ++k)
          q[static_cast<size_t>(r * in + gi * gs + k)] =
              static_cast<uint8_t>(std::clamp(round_even(row[k] / scale) + zero, 0.0f, 15.0f));
      }
      scales[static_cast<size_t>(gi * out + r)] = scale;
      zeros[static_cast<size_t>(gi * out + r)] = zero;
    }
  });
  std::vector<uint32_t> qweight(static_cast<size_t>(in * (out / 8)), 0),
      qzeros(static_cast<size_t>(groups * (out / 8)), 0);
  for (int64_t k = 0; k < in; ++k)
    for (int64_t c = 0; c < out / 8; ++c)
      for (int i = 0; i < 8; ++i)
        qweight[static_cast<size_t>(k * (out / 8) + c)] |=
            static_cast<uint32_t>(q[static_cast<size_t>((8 * c + kAwqOrder[i]) * in + k)]) << (4 * i);
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t c = 0; c < out / 8; ++c)
      for (int i = 0; i < 8; ++i)
        qzeros[static_cast<size_t>(gi * (out / 8) + c)] |=
            static_cast<uint32_t>(zeros[static_cast<size_t>(gi * out + 8 * c + kAwqOrder[i])]) << (4 * i);
  std::vector<Tensor> t = {int32_tensor(qweight, {in, out / 8})};
  if (!o.symmetric) t.push_back(int32_tensor(qzeros, {groups, out / 8}));
  t.push_back(float_tensor(scales, {groups, out}, o.scale_dtype));
  return t;
}

// ---- compressed-tensors (llm-compressor's calculate_qparams / quantize, and pack_to_int32) ----

std::vector<Tensor> w8a8(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  Tensor codes = Tensor::empty(DType::I8, {out, in});
  std::vector<float> scales(static_cast<size_t>(out));
  for_rows(out, [&](int64_t r) {
    {
      float amax = 0.0f;
      for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(w[r * in + k]));
      const float s = stored(amax > 0.0f ? amax / 127.5f : 1.0f, o.scale_dtype);  // symmetric: amax / (255 / 2)
      scales[static_cast<size_t>(r)] = s;
      for (int64_t k = 0; k < in; ++k)
        codes.data<int8_t>()[r * in + k] =
            static_cast<int8_t>(round_even(std::clamp(w[r * in + k] / s, -128.0f, 127.0f)));
    }
  });
  return {codes, float_tensor(scales, {out, 1}, o.scale_dtype)};
}

std::vector<Tensor> w4a16(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  const int64_t gs = group_width(o, in), groups = cdiv(in, gs);
  const std::vector<int32_t> g = group_map(in, gs, o.act_order);
  const auto members = group_members(g, groups);
  std::vector<float> scales(static_cast<size_t>(out * groups));
  std::vector<int> zps(static_cast<size_t>(out * groups), 0);
  std::vector<int> q(static_cast<size_t>(out * in));
  for_rows(out, [&](int64_t r) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const auto& ks = members[static_cast<size_t>(gi)];
      float lo = 0.0f, hi = 0.0f;
      for (int64_t k : ks) lo = std::min(lo, w[r * in + k]), hi = std::max(hi, w[r * in + k]);
      float s;
      int zp = 0;
      if (o.symmetric) {
        const float amax = std::max(-lo, hi);
        s = stored(amax > 0.0f ? amax / 7.5f : 1.0f, o.scale_dtype);  // amax / (15 / 2)
      } else {
        s = stored(hi > lo ? (hi - lo) / 15.0f : 1.0f, o.scale_dtype);
        zp = static_cast<int>(std::clamp(round_even(-8.0f - lo / s), -8.0f, 7.0f));
      }
      scales[static_cast<size_t>(r * groups + gi)] = s;
      zps[static_cast<size_t>(r * groups + gi)] = zp;
      for (int64_t k : ks)
        q[static_cast<size_t>(r * in + k)] =
            static_cast<int>(round_even(std::clamp(w[r * in + k] / s + static_cast<float>(zp), -8.0f, 7.0f)));
    }
  });
  const int64_t words = cdiv(in, 8);
  std::vector<uint32_t> packed(static_cast<size_t>(out * words), 0);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k)
      packed[static_cast<size_t>(r * words + k / 8)] |= static_cast<uint32_t>(q[static_cast<size_t>(r * in + k)] + 8)
                                                        << (4 * (k % 8));
  Tensor shape = Tensor::empty(DType::I64, {2});
  shape.data<int64_t>()[0] = out;
  shape.data<int64_t>()[1] = in;
  std::vector<Tensor> t = {int32_tensor(packed, {out, words}), float_tensor(scales, {out, groups}, o.scale_dtype),
                           shape};
  if (!o.symmetric) {
    std::vector<uint32_t> zp_packed(static_cast<size_t>(cdiv(out, 8) * groups), 0);
    for (int64_t r = 0; r < out; ++r)
      for (int64_t gi = 0; gi < groups; ++gi)
        zp_packed[static_cast<size_t>((r / 8) * groups + gi)] |=
            static_cast<uint32_t>(zps[static_cast<size_t>(r * groups + gi)] + 8) << (4 * (r % 8));
    t.push_back(int32_tensor(zp_packed, {cdiv(out, 8), groups}));
  }
  if (o.act_order) {
    Tensor g_idx = Tensor::empty(DType::I32, {in});
    std::memcpy(g_idx.raw(), g.data(), g.size() * 4);
    t.push_back(g_idx);
  }
  return t;
}

json ct_args(int bits, const char* type, bool symmetric, const char* strategy, const json& group_size, bool dynamic,
             const json& actorder) {
  return {{"num_bits", bits},
          {"type", type},
          {"symmetric", symmetric},
          {"strategy", strategy},
          {"group_size", group_size},
          {"block_structure", nullptr},
          {"dynamic", dynamic},
          {"actorder", actorder},
          {"observer", dynamic ? json(nullptr) : json("minmax")},
          {"observer_kwargs", json::object()}};
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::strchr(".^$|()[]{}*+?\\", c)) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool format_holds(const QuantFormatOptions& o, int64_t out, int64_t in, std::string* why) {
  check_options(o);
  auto no = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const int64_t gs = group_width(o, in);
  switch (o.format) {
    case QuantFormat::Fp8Block:
    case QuantFormat::W8A8:
      return true;
    case QuantFormat::Gptq:
      if (in % 8)
        return no("gptq packs 8 input channels per int32, and " + std::to_string(in) + " is not a multiple of 8");
      if (out % 8)
        return no("gptq packs zeros of 8 output channels per int32, and " + std::to_string(out) +
                  " is not a multiple of 8");
      return true;
    case QuantFormat::Awq:
      if (out % 8)
        return no("awq packs 8 output channels per int32, and " + std::to_string(out) + " is not a multiple of 8");
      if (in % gs)
        return no("awq needs whole groups, and " + std::to_string(in) +
                  " input channels is not a multiple of group_size " + std::to_string(gs));
      return true;
    case QuantFormat::W4A16:
      if (in % gs)
        return no("compressed-tensors needs whole groups, and " + std::to_string(in) +
                  " input channels is not a multiple of group_size " + std::to_string(gs));
      return true;
  }
  return false;
}

std::vector<TensorDecl> quantized_linear_decls(const QuantFormatOptions& o, const std::string& m, int64_t out,
                                               int64_t in) {
  check_options(o);
  const int64_t gs = group_width(o, in), groups = cdiv(in, gs);
  switch (o.format) {
    case QuantFormat::Fp8Block:
      return {{m + ".weight", DType::F8E4M3, {out, in}},
              {m + ".weight_scale_inv", o.scale_dtype, {cdiv(out, o.block_n), cdiv(in, o.block_k)}}};
    case QuantFormat::Gptq:
      return {{m + ".qweight", DType::I32, {in / 8, out}},
              {m + ".qzeros", DType::I32, {groups, out / 8}},
              {m + ".scales", o.scale_dtype, {groups, out}},
              {m + ".g_idx", DType::I32, {in}}};
    case QuantFormat::Awq: {
      std::vector<TensorDecl> d = {{m + ".qweight", DType::I32, {in, out / 8}}};
      if (!o.symmetric) d.push_back({m + ".qzeros", DType::I32, {groups, out / 8}});
      d.push_back({m + ".scales", o.scale_dtype, {groups, out}});
      return d;
    }
    case QuantFormat::W8A8:
      return {{m + ".weight", DType::I8, {out, in}}, {m + ".weight_scale", o.scale_dtype, {out, 1}}};
    case QuantFormat::W4A16: {
      std::vector<TensorDecl> d = {{m + ".weight_packed", DType::I32, {out, cdiv(in, 8)}},
                                   {m + ".weight_scale", o.scale_dtype, {out, groups}},
                                   {m + ".weight_shape", DType::I64, {2}}};
      if (!o.symmetric) d.push_back({m + ".weight_zero_point", DType::I32, {cdiv(out, 8), groups}});
      if (o.act_order) d.push_back({m + ".weight_g_idx", DType::I32, {in}});
      return d;
    }
  }
  return {};
}

std::vector<Tensor> quantize_linear(const QuantFormatOptions& o, const float* w, int64_t out, int64_t in) {
  std::string why;
  if (!format_holds(o, out, in, &why))
    throw InvalidArgumentError(std::string("cannot write a [") + std::to_string(out) + ", " + std::to_string(in) +
                               "] layer as " + quant_format_name(o.format) + ": " + why);
  switch (o.format) {
    case QuantFormat::Fp8Block:
      return fp8_block(o, w, out, in);
    case QuantFormat::Gptq:
      return gptq(o, w, out, in);
    case QuantFormat::Awq:
      return awq(o, w, out, in);
    case QuantFormat::W8A8:
      return w8a8(o, w, out, in);
    case QuantFormat::W4A16:
      return w4a16(o, w, out, in);
  }
  return {};
}

std::vector<TensorDecl> quantized_fused_expert_decls(const QuantFormatOptions& o, const std::string& name,
                                                     int64_t experts, int64_t rows, int64_t cols) {
  check_options(o);
  return {{name, DType::F8E4M3, {experts, rows, cols}},
          {name + "_scale_inv", o.scale_dtype, {experts, cdiv(rows, o.block_n), cdiv(cols, o.block_k)}}};
}

std::vector<Tensor> quantize_fused_experts(const QuantFormatOptions& o, const float* w, int64_t experts, int64_t rows,
                                           int64_t cols) {
  if (o.format != QuantFormat::Fp8Block)
    throw InvalidArgumentError(std::string("fused expert tensors are written as fp8 blocks only, not ") +
                               quant_format_name(o.format));
  const int64_t gr = cdiv(rows, o.block_n), gc = cdiv(cols, o.block_k);
  Tensor codes = Tensor::empty(DType::F8E4M3, {experts, rows, cols});
  std::vector<float> all, grid;
  for (int64_t e = 0; e < experts; ++e) {
    fp8_block_quantize(o, w + e * rows * cols, rows, cols, codes.data<uint8_t>() + e * rows * cols, grid);
    all.insert(all.end(), grid.begin(), grid.end());
  }
  return {codes, float_tensor(all, {experts, gr, gc}, o.scale_dtype)};
}

json quantization_config_json(const QuantFormatOptions& o, const std::vector<std::string>& dense) {
  switch (o.format) {
    case QuantFormat::Fp8Block:
      return {{"quant_method", "fp8"},
              {"fmt", "e4m3"},
              {"activation_scheme", "dynamic"},
              {"weight_block_size", {o.block_n, o.block_k}},
              {"modules_to_not_convert", dense}};
    case QuantFormat::Gptq: {
      json dynamic = json::object();
      for (const auto& m : dense) dynamic["-:" + regex_escape(m) + "$"] = json::object();
      return {{"quant_method", "gptq"},     {"bits", 4},
              {"group_size", o.group_size}, {"desc_act", o.act_order},
              {"sym", o.symmetric},         {"static_groups", false},
              {"true_sequential", true},    {"damp_percent", 0.01},
              {"lm_head", o.lm_head},       {"checkpoint_format", o.gptq_v2 ? "gptq_v2" : "gptq"},
              {"dynamic", dynamic}};
    }
    case QuantFormat::Awq:
      return {{"quant_method", "awq"},      {"bits", 4},         {"group_size", o.group_size},
              {"zero_point", !o.symmetric}, {"version", "gemm"}, {"modules_to_not_convert", dense}};
    case QuantFormat::W8A8:
    case QuantFormat::W4A16: {
      const bool w8 = o.format == QuantFormat::W8A8;
      const char* fmt = w8 ? "int-quantized" : "pack-quantized";
      json group = {{"targets", {"Linear"}}, {"format", fmt}, {"output_activations", nullptr}};
      if (w8) {
        group["weights"] = ct_args(8, "int", true, "channel", nullptr, false, nullptr);
        group["input_activations"] = ct_args(8, "int", true, "token", nullptr, true, nullptr);
      } else {
        const bool channel = o.group_size == -1;
        group["weights"] =
            ct_args(4, "int", o.symmetric, channel ? "channel" : "group", channel ? json(nullptr) : json(o.group_size),
                    false, o.act_order ? json("group") : json(nullptr));
        group["input_activations"] = nullptr;
      }
      return {{"quant_method", "compressed-tensors"},
              {"format", fmt},
              {"quantization_status", "compressed"},
              {"config_groups", {{"group_0", group}}},
              {"ignore", dense},
              {"kv_cache_scheme", nullptr},
              {"global_compression_ratio", nullptr},
              {"sparsity_config", json::object()}};
    }
  }
  return {};
}

}  // namespace opchain
