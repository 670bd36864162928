#pragma once
// Element types and the conversions every vendor shares.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace opchain {

// I8 and F8E4M3 are quantised weights' storage types (safetensors I8, F8_E4M3); a U8 weight of a
// quantised op holds two 4-bit values per byte (ops/quant_params.h).
enum class DType : uint8_t { F32, F16, BF16, I32, I64, U8, I8, F8E4M3 };
inline constexpr int kNumDTypes = 8;

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                 // "f32", "bf16", ...
bool parse_dtype(std::string_view name, DType& out);  // accepts ours and safetensors' ("BF16", "F32", ...)

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch does when it casts float32 to bfloat16.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// float8 e4m3fn (OCP FP8, torch.float8_e4m3fn): bias 7, no infinities, max +-448, NaN = 0x7f / 0xff.
// Decoding is exact; encoding rounds to nearest even and saturates at +-448 (as quantisers clamp first).
float f8e4m3_to_f32(uint8_t v);
uint8_t f32_to_f8e4m3(float f);

// Reads element i of a float-typed buffer (f32/f16/bf16) as float.
inline float load_as_f32(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::F32:
      return static_cast<const float*>(data)[i];
    case DType::BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::F16:
      return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::F8E4M3:
      return f8e4m3_to_f32(static_cast<const uint8_t*>(data)[i]);
    default:
      return 0.0f;
  }
}

}  // namespace opchain
