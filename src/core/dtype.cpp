#include "core/dtype.h"

#include <bit>

namespace opchain {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 2;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
    case DType::U8:
      return 1;
    case DType::I8:
      return 1;
    case DType::F8E4M3:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::U8:
      return "u8";
    case DType::I8:
      return "i8";
    case DType::F8E4M3:
      return "f8e4m3";
  }
  return "?";
}

bool parse_dtype(std::string_view n, DType& out) {
  struct Name {
    std::string_view a, b;
    DType t;
  };
  static constexpr Name names[] = {{"f32", "F32", DType::F32},
                                   {"f16", "F16", DType::F16},
                                   {"bf16", "BF16", DType::BF16},
                                   {"i32", "I32", DType::I32},
                                   {"i64", "I64", DType::I64},
                                   {"u8", "U8", DType::U8},
                                   {"i8", "I8", DType::I8},
                                   {"f8e4m3", "F8_E4M3", DType::F8E4M3},
                                   {"float32", "float32", DType::F32},
                                   {"float16", "float16", DType::F16},
                                   {"bfloat16", "bfloat16", DType::BF16}};
  for (const auto& e : names) {
    if (n == e.a || n == e.b) {
      out = e.t;
      return true;
    }
  }
  return false;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(half);
}

float f8e4m3_to_f32(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t exp = (v >> 3) & 0xfu, mant = v & 0x7u;
  if (exp == 0xf && mant == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);  // NaN
  if (exp == 0) {                                                                  // subnormal: mant * 2^-9
    const float m = static_cast<float>(mant) * 0.001953125f;
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exp + 127 - 7) << 23) | (mant << 20));
}

uint8_t f32_to_f8e4m3(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7f);  // NaN
  float a = std::bit_cast<float>(x & 0x7fffffffu);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);  // saturate (inf included)
  if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9, round to nearest even
    const float q = a * 512.0f;
    float r = static_cast<float>(static_cast<int>(q));
    const float frac = q - r;
    if (frac > 0.5f || (frac == 0.5f && (static_cast<int>(r) & 1))) r += 1.0f;
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(r));  // r == 8 is the smallest normal, 0x08
  }
  // Normal: keep 3 mantissa bits, round to nearest even on the 20 dropped bits; a carry moves the exponent.
  const uint32_t ax = std::bit_cast<uint32_t>(a);
  uint32_t exp = ((ax >> 23) & 0xffu) - 127 + 7;
  uint32_t mant = (ax >> 20) & 0x7u;
  const uint32_t rem = ax & 0xfffffu;
  if (rem > 0x80000u || (rem == 0x80000u && (mant & 1u))) {
    if (++mant == 8) {
      mant = 0;
      ++exp;
    }
  }
  if (exp > 15 || (exp == 15 && mant == 7)) return static_cast<uint8_t>(sign | 0x7e);  // rounded past 448
  return static_cast<uint8_t>(sign | (exp << 3) | mant);
}

}  // namespace opchain
