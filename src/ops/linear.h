#pragma once
// Layer 4: the `linear` op's arguments. Kernel signature: void(const LinearArgs&).
#include <tuple>

#include "core/tensor.h"
#include "ops/field.h"
#include "ops/matmul_precision.h"

namespace opchain {

// out = x @ weight^T + bias, accumulated in f32 (quantised weights: Note [Quantised weights]).
struct LinearArgs {
  Tensor x;                                          // f32 [n, in]
  Tensor weight;                                     // W [out, in] (Hugging Face layout), or a quantised weight's codes
  Tensor bias;                                       // W [out] or null
  Tensor out;                                        // f32 [n, out]
  MatmulPrecision precision = MatmulPrecision::F32;  // Note [Matmul precision]
  const QuantParams* quant = nullptr;  // set: weight holds codes (u8 / i8 / f8e4m3), Note [Quantised weights]

  // Note [Op fields]: the schema's order, one entry per member.
  static constexpr auto fields() {
    using A = LinearArgs;
    return std::tuple{Field{"x", Role::In, &A::x},
                      Field{"weight", Role::In, &A::weight},
                      Field{"bias", Role::In, &A::bias},
                      Field{"quant", Role::In, &A::quant},
                      Field{"precision", Role::Attr, &A::precision},
                      Field{"out", Role::Out, &A::out}};
  }
};

}  // namespace opchain
