#include "core/quant.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace opchain {

const char* quant_scheme_name(QuantScheme s) {
  switch (s) {
    case QuantScheme::Int4Group: return "int4 group";
    case QuantScheme::Int8Channel: return "int8 channel";
    case QuantScheme::Fp8Block: return "fp8 block";
    case QuantScheme::Fp8Channel: return "fp8 channel";
  }
  return "?";
}

const char* act_quant_name(ActQuant a) {
  switch (a) {
    case ActQuant::None: return "none";
    case ActQuant::Int8Token: return "int8 per token";
    case ActQuant::Fp8Group: return "fp8 per token group";
  }
  return "?";
}

std::string QuantParams::describe() const {
  std::string s = quant_scheme_name(scheme);
  if (scheme == QuantScheme::Int4Group || scheme == QuantScheme::Fp8Block) s += " " + std::to_string(group_size);
  if (!zeros.is_null()) s += " asym";
  if (!group_of.is_null()) s += " g_idx";
  return s + " (activations " + act_quant_name(act) + ")";
}

std::string Weight::desc() const { return quant ? quant->describe() + " " + values.desc() : values.desc(); }

void dequantize_row(const Tensor& codes, const QuantParams& q, int64_t o, float* out) {
  const int64_t in = q.in_features, groups = q.groups();
  const float* scale = q.scales.data<float>() + o * groups;
  const float* zero = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + o * groups;
  switch (q.scheme) {
    case QuantScheme::Int4Group: {
      const uint8_t* row = codes.data<uint8_t>() + o * codes.size(1);
      for (int64_t k = 0; k < in; ++k) {
        const int64_t g = q.group_of_channel(k);
        const float code = static_cast<float>((row[k / 2] >> ((k & 1) * 4)) & 0xf);
        out[k] = (code - (zero ? zero[g] : 8.0f)) * scale[g];
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
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = load_as_f32(w.values.raw(), w.values.dtype(), static_cast<size_t>(i));
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
