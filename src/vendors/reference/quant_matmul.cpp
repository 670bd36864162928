#include "vendors/reference/quant_matmul.h"

#include <algorithm>

#include "core/error.h"

namespace opchain::reference {

QuantActivation prepare_activation(const float* x, int64_t in, MatmulPrecision p, const QuantParams& q) {
  QuantActivation a;
  a.form = activation_form(p, q);
  switch (a.form) {
    case ActivationForm::F32:
      a.values.assign(x, x + in);
      break;
    case ActivationForm::Bf16:
      a.values.resize(static_cast<size_t>(in));
      for (int64_t k = 0; k < in; ++k) a.values[static_cast<size_t>(k)] = round_to_bf16(x[k]);
      break;
    case ActivationForm::Int8Token:
      a.codes.resize(static_cast<size_t>(in));
      a.scales = {quantize_row_int8(x, in, a.codes.data())};
      break;
    case ActivationForm::Int8Group: {
      // The groups are the weight's, over its code columns: column j holds channel input_order[j].
      a.group = q.group_size;
      std::vector<float> cols(x, x + in);
      if (!q.input_order.is_null())
        for (int64_t j = 0; j < in; ++j) cols[static_cast<size_t>(j)] = x[q.input_order.data<int32_t>()[j]];
      a.codes.resize(static_cast<size_t>(in));
      for (int64_t g0 = 0; g0 < in; g0 += a.group)
        a.scales.push_back(quantize_row_int8(cols.data() + g0, std::min(a.group, in - g0), a.codes.data() + g0));
      break;
    }
    case ActivationForm::Fp8Group: {
      a.group = q.act_group > 0 ? q.act_group : in;
      std::vector<uint8_t> f8(static_cast<size_t>(in));
      a.scales.resize(static_cast<size_t>((in + a.group - 1) / a.group));
      quantize_row_fp8(x, in, a.group, f8.data(), a.scales.data());
      a.values.resize(static_cast<size_t>(in));
      for (int64_t k = 0; k < in; ++k) a.values[static_cast<size_t>(k)] = f8e4m3_to_f32(f8[static_cast<size_t>(k)]);
      break;
    }
  }
  return a;
}

float quant_dot(const QuantActivation& a, const Tensor& codes, const QuantParams& q, int64_t o,
                std::vector<float>& wrow) {
  const int64_t in = q.in_features;
  switch (a.form) {
    case ActivationForm::F32:
    case ActivationForm::Bf16: {
      wrow.resize(static_cast<size_t>(in));
      dequantize_row(codes, q, o, wrow.data());
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k) acc += a.values[static_cast<size_t>(k)] * wrow[static_cast<size_t>(k)];
      return acc;
    }
    case ActivationForm::Int8Token: {
      if (q.scheme != QuantScheme::Int8Channel)
        throw Error("int8 activations need int8 channel weights, got " + q.describe());
      const int8_t* w = codes.data<int8_t>() + o * in;
      int64_t acc = 0, xsum = 0;
      for (int64_t k = 0; k < in; ++k) {
        acc += static_cast<int64_t>(a.codes[static_cast<size_t>(k)]) * w[k];
        xsum += a.codes[static_cast<size_t>(k)];
      }
      if (!q.zeros.is_null()) acc -= static_cast<int64_t>(q.zeros.data<float>()[o]) * xsum;
      return static_cast<float>(acc) * a.scales[0] * q.scales.data<float>()[o];
    }
    case ActivationForm::Int8Group: {
      const uint8_t* w = codes.data<uint8_t>() + o * codes.size(1);
      const float* sw = q.scales.data<float>() + o * q.groups();
      const float* zw = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + o * q.groups();
      float out = 0.0f;
      for (int64_t g0 = 0, g = 0; g0 < in; g0 += a.group, ++g) {
        int64_t dot = 0, xsum = 0;
        for (int64_t k = g0; k < std::min(in, g0 + a.group); ++k) {
          const int64_t code = (w[k / 2] >> (4 * (k % 2))) & 0xf, xq = a.codes[static_cast<size_t>(k)];
          dot += xq * code;
          xsum += xq;
        }
        const float d = static_cast<float>(dot) - (zw ? zw[g] : 8.0f) * static_cast<float>(xsum);
        out += d * (a.scales[static_cast<size_t>(g)] * sw[g]);
      }
      return out;
    }
    case ActivationForm::Fp8Group: {
      if (q.scheme != QuantScheme::Fp8Block && q.scheme != QuantScheme::Fp8Channel)
        throw Error("fp8 activations need fp8 weights, got " + q.describe());
      const uint8_t* w = codes.data<uint8_t>() + o * in;
      const float* sw = q.scales.data<float>() + o * q.groups();
      float out = 0.0f;
      for (int64_t g0 = 0, g = 0; g0 < in; g0 += a.group, ++g) {
        float acc = 0.0f;
        for (int64_t k = g0; k < std::min(in, g0 + a.group); ++k)
          acc += a.values[static_cast<size_t>(k)] * f8e4m3_to_f32(w[k]);
        out += acc * a.scales[static_cast<size_t>(g)] * (q.scheme == QuantScheme::Fp8Block ? sw[g] : sw[0]);
      }
      return out;
    }
  }
  return 0.0f;
}

}  // namespace opchain::reference
