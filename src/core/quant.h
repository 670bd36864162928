#pragma once
// Note [Quantised weights]
// A quantised weight is stored as its integer (or fp8) codes plus the parameters that turn them back
// into numbers. Whatever the checkpoint's layout (GPTQ, AWQ, compressed-tensors, fp8 blocks; see
// docs/quantization.md), the loader converts it once into one canonical form per scheme, in which
// every output row is self-contained, so rows can be selected, split and stacked like a dense
// weight's (q/gate splits, gate/up stacking, Qwen3-Next's regrouping):
//   Int4Group    codes u8 [out, ceil(in/2)]: two unsigned 4-bit codes per byte, the even code column
//                in the low nibble; column j's w = (code - zero[o, g]) * scale[o, g], g = group_of[j]
//                when given, else j / group_size. Column j is input channel input_order[j] when given,
//                else j. An act-order checkpoint (GPTQ desc_act, compressed-tensors actorder group)
//                assigns channels to groups out of order; the loader sorts its columns by group
//                (input_order) so every group is contiguous again, as kernels want, and keeps the
//                channel-order map group_of only where sorting cannot give whole groups of group_size.
//   Int8Channel  codes i8 [out, in]; w = (code - zero[o]) * scale[o] (zero empty: 0).
//   Fp8Block     codes f8e4m3 [out, in]; w = fp8(code) * scale[o, k / group_size] (each row holds its
//                block row's scales, so partial edge blocks need nothing special).
//   Fp8Channel   codes f8e4m3 [out, in]; w = fp8(code) * scale[o] (a per-tensor scale repeated).
// The activations that meet such a weight are the precision's (Note [Matmul precision]); in the
// Quantized precision they are what the format names (`act`), defined in quant.cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace opchain {

enum class QuantScheme : uint8_t { Int4Group, Int8Channel, Fp8Block, Fp8Channel };
const char* quant_scheme_name(QuantScheme s);

// How a format quantises activations at inference (used in the Quantized precision).
enum class ActQuant : uint8_t {
  None,       // weight-only (W4A16 etc.): bf16 activations
  Int8Token,  // dynamic per token: scale = amax / 127, codes = clamp(rne(x * 127 / amax), -128, 127)
  Fp8Group,   // dynamic per token and group of act_group channels: scale = max(amax, 1e-10) / 448
};
const char* act_quant_name(ActQuant a);

struct QuantParams {
  QuantScheme scheme = QuantScheme::Int8Channel;
  int64_t in_features = 0;
  int64_t group_size = 0;  // input channels per scale column (Int4Group, Fp8Block); 0 = all
  Tensor scales;           // f32 [out, groups] (groups = 1 for the channel schemes)
  Tensor zeros;            // f32 [out, groups], or null: 0 (Int8Channel), 8 (Int4Group: symmetric)
  Tensor group_of;         // i32 [in] or null: each code column's scale column (unsortable act-order maps)
  Tensor input_order;      // i32 [in] or null: the input channel each code column holds (sorted act-order)
  ActQuant act = ActQuant::None;
  int64_t act_group = 0;  // Fp8Group: channels per activation scale (the weight's block, or in_features)

  int64_t groups() const { return scales.is_null() ? 0 : scales.size(1); }
  // Code column j's scale column.
  int64_t group_of_column(int64_t j) const {
    return !group_of.is_null() ? group_of.data<int32_t>()[j] : group_size > 0 ? j / group_size : 0;
  }
  // Whether each group's columns are contiguous, group_size wide (what SIMD tiles need).
  bool contiguous_groups() const { return group_of.is_null() && group_size > 0; }
  std::string describe() const;  // "int4 group 128 (act none)"
};

// A linear layer's weight: dense (quant null; values W [out, in] f32/bf16/f16) or quantised (values are
// the codes, quant their parameters). Shared, so rows can be copied cheaply into module params.
struct Weight {
  Tensor values;
  std::shared_ptr<const QuantParams> quant;

  Weight() = default;
  Weight(Tensor v, std::shared_ptr<const QuantParams> q = nullptr)
      : values(std::move(v)), quant(std::move(q)) {}  // NOLINT: a dense tensor is a weight
  bool quantized() const { return quant != nullptr; }
  int64_t rows() const { return values.size(0); }
  int64_t cols() const { return quant ? quant->in_features : values.size(1); }
  DType dtype() const { return values.dtype(); }
  std::string desc() const;  // "bf16[64, 128]" or "int4 group 32 u8[64, 64]"
};

// Rows of a weight: row ranges [begin, end) in order (select), or several weights' rows one after
// another (stack; all quantised alike, with the same group map). One range of one weight is a view of
// its values (scales and zeros are copied); anything else is copied into memory the result owns.
Weight select_rows(const Weight& w, const std::vector<std::pair<int64_t, int64_t>>& ranges);
Weight stack_rows(const std::vector<Weight>& parts);
// Input columns [begin, end) of a weight, copied (a row-parallel shard, Note [Tensor parallel] in
// backends/tensor_parallel.h). Quantised: int4 needs an even begin and, without a group map, whole
// scale groups (begin a multiple of group_size); fp8 blocks need whole blocks. Throws FormatError
// naming the rule otherwise.
Weight select_cols(const Weight& w, int64_t begin, int64_t end);

// Row `o` of a quantised weight, dequantised exactly (in f32) into out[0, in).
void dequantize_row(const Tensor& codes, const QuantParams& q, int64_t o, float* out);
// The dense f32 [out, in] matrix of a weight (tests, tools).
Tensor dequantize(const Weight& w);

// The activation quantisers of the Quantized precision (ActQuant), shared by every vendor so that
// all of them see the same codes. Int8Token: returns the row's scale, codes in q. Fp8Group: codes
// (e4m3 bytes) in q and one scale per group of `group` channels in scales.
float quantize_row_int8(const float* x, int64_t n, int8_t* q);
void quantize_row_fp8(const float* x, int64_t n, int64_t group, uint8_t* q, float* scales);

}  // namespace opchain
