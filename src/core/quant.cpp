#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace opchain {

const char* quant_scheme_name(QuantScheme s) {
  switch (s) {
    case QuantScheme::Int4Group:
      return "int4 group";
    case QuantScheme::Int8Channel:
      return "int8 channel";
    case QuantScheme::Fp8Block:
      return "fp8 block";
    case QuantScheme::Fp8Channel:
      return "fp8 channel";
  }
  return "?";
}

const char* act_quant_name(ActQuant a) {
  switch (a) {
    case ActQuant::None:
      return "none";
    case ActQuant::Int8Token:
      return "int8 per token";
    case ActQuant::Fp8Group:
      return "fp8 per token group";
  }
  return "?";
}

std::string QuantParams::describe() const {
  std::string s = quant_scheme_name(scheme);
  if (scheme == QuantScheme::Int4Group || scheme == QuantScheme::Fp8Block) s += " " + std::to_string(group_size);
  if (!zeros.is_null()) s += " asym";
  if (!group_of.is_null()) s += " g_idx";
  if (!input_order.is_null()) s += " sorted";
  return s + " (activations " + act_quant_name(act) + ")";
}

std::string Weight::desc() const { return quant ? quant->describe() + " " + values.desc() : values.desc(); }

namespace {

// Rows [b, e) of every part, in order, into one owning tensor of the parts' dtype and row width.
Tensor copy_rows(const std::vector<std::pair<const Tensor*, std::pair<int64_t, int64_t>>>& pieces) {
  const Tensor& first = *pieces.front().first;
  int64_t rows = 0;
  for (const auto& [t, r] : pieces) rows += r.second - r.first;
  Shape s = first.shape();
  s.dims[0] = rows;
  Tensor out = Tensor::empty(first.dtype(), s);
  const size_t row_bytes = first.nbytes() / static_cast<size_t>(std::max<int64_t>(first.size(0), 1));
  char* dst = out.data<char>();
  for (const auto& [t, r] : pieces) {
    if (t->dtype() != first.dtype() || t->nbytes() / static_cast<size_t>(std::max<int64_t>(t->size(0), 1)) != row_bytes)
      throw FormatError("cannot stack rows of " + t->desc() + " under rows of " + first.desc());
    if (r.first < 0 || r.second < r.first || r.second > t->size(0))
      throw FormatError("row range [" + std::to_string(r.first) + ", " + std::to_string(r.second) + ") outside " +
                        t->desc());
    std::memcpy(dst, t->data<char>() + static_cast<size_t>(r.first) * row_bytes,
                static_cast<size_t>(r.second - r.first) * row_bytes);
    dst += static_cast<size_t>(r.second - r.first) * row_bytes;
  }
  return out;
}

bool same_tensor_contents(const Tensor& a, const Tensor& b) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null();
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Weight gather(const std::vector<std::pair<const Weight*, std::pair<int64_t, int64_t>>>& pieces,
              bool view_values = false) {
  const Weight& first = *pieces.front().first;
  auto collect = [&](auto member) {
    std::vector<std::pair<const Tensor*, std::pair<int64_t, int64_t>>> out;
    for (const auto& [w, r] : pieces) out.push_back({&member(*w), r});
    return copy_rows(out);
  };
  Weight out;
  out.values = view_values ? first.values.slice_rows(pieces[0].second.first, pieces[0].second.second)
                           : collect([](const Weight& w) -> const Tensor& { return w.values; });
  if (!first.quant) return out;
  for (const auto& [w, r] : pieces) {
    const QuantParams& a = *first.quant;
    const QuantParams& b = *w->quant;
    if (!w->quant || a.scheme != b.scheme || a.in_features != b.in_features || a.group_size != b.group_size ||
        a.act != b.act || a.act_group != b.act_group || a.zeros.is_null() != b.zeros.is_null() ||
        !same_tensor_contents(a.group_of, b.group_of) || !same_tensor_contents(a.input_order, b.input_order))
      throw FormatError("cannot stack a " + (w->quant ? w->quant->describe() : std::string("dense")) +
                        " weight under a " + a.describe() + " one: stacked layers must be quantised alike");
  }
  auto q = std::make_shared<QuantParams>(*first.quant);
  q->scales = collect([](const Weight& w) -> const Tensor& { return w.quant->scales; });
  if (!first.quant->zeros.is_null())
    q->zeros = collect([](const Weight& w) -> const Tensor& { return w.quant->zeros; });
  out.quant = q;
  return out;
}

}  // namespace

Weight select_rows(const Weight& w, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<std::pair<const Weight*, std::pair<int64_t, int64_t>>> pieces;
  for (const auto& r : ranges) pieces.push_back({&w, r});
  if (ranges.size() == 1 && ranges[0].first >= 0 && ranges[0].first <= ranges[0].second &&
      ranges[0].second <= w.rows()) {
    // Expert slices of a fused tensor: the codes stay in the mapping, only the parameters are copied.
    return gather(pieces, /*view_values=*/true);
  }
  return gather(pieces);
}

Weight stack_rows(const std::vector<Weight>& parts) {
  std::vector<std::pair<const Weight*, std::pair<int64_t, int64_t>>> pieces;
  for (const auto& p : parts) pieces.push_back({&p, {0, p.rows()}});
  return gather(pieces);
}

namespace {

// Columns [begin, end) of every row of a 2-D tensor, in units of `elem_bytes`-wide elements.
Tensor copy_cols(const Tensor& t, int64_t begin, int64_t end, size_t elem_bytes) {
  const int64_t rows = t.size(0), width = end - begin;
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(std::max<int64_t>(rows, 1));
  Tensor out = Tensor::empty(
      t.dtype(), {rows, static_cast<int64_t>(static_cast<size_t>(width) * elem_bytes / dtype_size(t.dtype()))});
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(out.data<char>() + static_cast<size_t>(r) * static_cast<size_t>(width) * elem_bytes,
                t.data<char>() + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(begin) * elem_bytes,
                static_cast<size_t>(width) * elem_bytes);
  return out;
}

// Input channels [begin, end) of an int4 weight whose columns were sorted by group (input_order), back
// in channel order with each channel's group in group_of: a shard holds part of each group, so its
// columns cannot be sorted into whole groups again.
Weight unsorted_int4_cols(const Weight& w, int64_t begin, int64_t end) {
  const QuantParams& q = *w.quant;
  const int64_t in = q.in_features, width = end - begin, row_bytes = w.values.size(1);
  const int32_t* order = q.input_order.data<int32_t>();
  std::vector<int64_t> column_of(static_cast<size_t>(in));
  for (int64_t j = 0; j < in; ++j) column_of[static_cast<size_t>(order[j])] = j;
  auto out_q = std::make_shared<QuantParams>(q);
  out_q->in_features = width;
  out_q->input_order = Tensor();
  out_q->group_of = Tensor::empty(DType::I32, {width});
  for (int64_t k = begin; k < end; ++k)
    out_q->group_of.data<int32_t>()[k - begin] =
        static_cast<int32_t>(q.group_of_column(column_of[static_cast<size_t>(k)]));
  const int64_t rows = w.rows(), out_bytes = (width + 1) / 2;
  Tensor codes = Tensor::empty(DType::U8, {rows, out_bytes});
  std::memset(codes.raw(), 0, codes.nbytes());
  for (int64_t o = 0; o < rows; ++o) {
    const uint8_t* src = w.values.data<uint8_t>() + o * row_bytes;
    uint8_t* dst = codes.data<uint8_t>() + o * out_bytes;
    for (int64_t k = begin; k < end; ++k) {
      const int64_t j = column_of[static_cast<size_t>(k)], d = k - begin;
      dst[d / 2] |= static_cast<uint8_t>(((src[j / 2] >> ((j & 1) * 4)) & 0xf) << ((d & 1) * 4));
    }
  }
  return Weight(codes, out_q);
}

}  // namespace

Weight select_cols(const Weight& w, int64_t begin, int64_t end) {
  const int64_t in = w.cols();
  if (begin < 0 || end < begin || end > in)
    throw FormatError("column range [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside " + w.desc());
  if (!w.quant) return Weight(copy_cols(w.values, begin, end, dtype_size(w.dtype())));
  const QuantParams& q = *w.quant;
  if (!q.input_order.is_null()) return unsorted_int4_cols(w, begin, end);
  auto out_q = std::make_shared<QuantParams>(q);
  out_q->in_features = end - begin;
  const auto need = [&](bool ok, const std::string& rule) {
    if (!ok)
      throw FormatError("cannot split " + w.desc() + " at input columns [" + std::to_string(begin) + ", " +
                        std::to_string(end) + "): " + rule);
  };
  Weight out;
  switch (q.scheme) {
    case QuantScheme::Int4Group:
      need(begin % 2 == 0 && (end % 2 == 0 || end == in), "int4 codes pack two columns per byte");
      out.values = copy_cols(w.values, begin / 2, (end + 1) / 2, 1);
      break;
    case QuantScheme::Int8Channel:
    case QuantScheme::Fp8Channel:
      out.values = copy_cols(w.values, begin, end, 1);
      break;
    case QuantScheme::Fp8Block:
      out.values = copy_cols(w.values, begin, end, 1);
      break;
  }
  if (q.scheme == QuantScheme::Int4Group || q.scheme == QuantScheme::Fp8Block) {
    if (!q.group_of.is_null()) {  // act-order: each column keeps its own group; the scales stay whole
      out_q->group_of = copy_cols(q.group_of.reshape({1, in}), begin, end, sizeof(int32_t)).reshape({end - begin});
    } else if (q.group_size > 0) {
      need(begin % q.group_size == 0,
           "the shard must start at a scale group (group size " + std::to_string(q.group_size) + ")");
      const int64_t g0 = begin / q.group_size, g1 = (end + q.group_size - 1) / q.group_size;
      out_q->scales = copy_cols(q.scales, g0, g1, sizeof(float));
      if (!q.zeros.is_null()) out_q->zeros = copy_cols(q.zeros, g0, g1, sizeof(float));
    }
  }
  if (q.act == ActQuant::Fp8Group && q.act_group > 0) {
    // A scale over the whole row becomes one over the shard's columns (the Quantized precision then
    // rounds differently from one process; f32 is exact either way).
    if (q.act_group >= in)
      out_q->act_group = end - begin;
    else
      need(begin % q.act_group == 0, "fp8 activation groups of " + std::to_string(q.act_group) + " must stay whole");
  }
  out.quant = out_q;
  return out;
}

void dequantize_row(const Tensor& codes, const QuantParams& q, int64_t o, float* out) {
  const int64_t in = q.in_features, groups = q.groups();
  const float* scale = q.scales.data<float>() + o * groups;
  const float* zero = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + o * groups;
  switch (q.scheme) {
    case QuantScheme::Int4Group: {
      const uint8_t* row = codes.data<uint8_t>() + o * codes.size(1);
      const int32_t* order = q.input_order.is_null() ? nullptr : q.input_order.data<int32_t>();
      for (int64_t j = 0; j < in; ++j) {
        const int64_t g = q.group_of_column(j);
        const float code = static_cast<float>((row[j / 2] >> ((j & 1) * 4)) & 0xf);
        out[order ? order[j] : j] = (code - (zero ? zero[g] : 8.0f)) * scale[g];
      }
      return;
    }
    case QuantScheme::Int8Channel: {
      const int8_t* row = codes.data<int8_t>() + o * in;
      for (int64_t k = 0; k < in; ++k) out[k] = (static_cast<float>(row[k]) - (zero ? zero[0] : 0.0f)) * scale[0];
      return;
    }
    case QuantScheme::Fp8Block: {
      const uint8_t* row = codes.data<uint8_t>() + o * in;
      for (int64_t k = 0; k < in; ++k) out[k] = f8e4m3_to_f32(row[k]) * scale[k / q.group_size];
      return;
    }
    case QuantScheme::Fp8Channel: {
      const uint8_t* row = codes.data<uint8_t>() + o * in;
      for (int64_t k = 0; k < in; ++k) out[k] = f8e4m3_to_f32(row[k]) * scale[0];
      return;
    }
  }
}

Tensor dequantize(const Weight& w) {
  if (!w.quant) {
    Tensor out = Tensor::empty(DType::F32, {w.rows(), w.cols()});
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data<float>()[i] = load_as_f32(w.values.raw(), w.values.dtype(), static_cast<size_t>(i));
    return out;
  }
  Tensor out = Tensor::empty(DType::F32, {w.rows(), w.cols()});
  for (int64_t o = 0; o < w.rows(); ++o) dequantize_row(w.values, *w.quant, o, out.data<float>() + o * w.cols());
  return out;
}

// vLLM's rule (csrc/cpu/quant.cpp dynamic_scaled_int8_quant_impl): scale = amax / 127, codes =
// x * (127 / amax) rounded to nearest even and saturated. (compressed-tensors' own simulation uses
// amax / 127.5; docs/quantization.md says why the engine follows the serving engine.)
float quantize_row_int8(const float* x, int64_t n, int8_t* q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (!(amax > 0.0f)) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -128.0f, 127.0f));
  return amax / 127.0f;
}

// vLLM's per_token_group_quant_fp8 (and DeepSeek's act_quant): scale = max(amax, 1e-10) / 448 per group,
// codes = e4m3(clamp(x / scale, -448, 448)).
void quantize_row_fp8(const float* x, int64_t n, int64_t group, uint8_t* q, float* scales) {
  for (int64_t g0 = 0, gi = 0; g0 < n; g0 += group, ++gi) {
    const int64_t g1 = std::min(n, g0 + group);
    float amax = 1e-10f;
    for (int64_t i = g0; i < g1; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float s = amax / 448.0f;
    scales[gi] = s;
    for (int64_t i = g0; i < g1; ++i) q[i] = f32_to_f8e4m3(std::clamp(x[i] / s, -448.0f, 448.0f));
  }
}

}  // namespace opchain
