// The Int8 precision's int4 matmul (Note [Matmul precision], ActivationForm::Int8Group) on the cpu vendor:
// its group dots are exact integers and its f32 combine is the reference's operations, so on every path
// (the zmm vpdpbusd tile on AVX-512 tiers with VNNI, the AVX2 vpmaddubsw tile on every x86 tier and for
// shapes the zmm one does not take, the generic loop elsewhere and for shapes neither takes) each output must be the
// reference's bits, whatever the batch: rows 1 to 9 and 37 (tile blocks of 4 and their remainders, column tails),
// groups of 64, 128 and 256, a short last group, zero points, act-order columns (input_order), and activations spread
// over many binades.
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "vendors/cpu/quant_simd.h"
#include "vendors/cpu_paths.h"
#include "vendors/kernel_harness.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain::harness {
namespace {

struct Shape {
  int64_t in, out, group;
  bool asym, sorted;
};

Weight int4_weight(std::mt19937& g, const Shape& s) {
  auto q = std::make_shared<QuantParams>();
  q->scheme = QuantScheme::Int4Group;
  q->in_features = s.in;
  q->group_size = s.group;
  const int64_t groups = (s.in + s.group - 1) / s.group;
  q->scales = rand_f32(g, {s.out, groups}, 0.001f, 0.01f);
  Tensor codes = Tensor::empty(DType::U8, {s.out, (s.in + 1) / 2});
  for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>(g());
  if (s.asym) {
    q->zeros = Tensor::empty(DType::F32, {s.out, groups});
    for (int64_t i = 0; i < q->zeros.numel(); ++i) q->zeros.data<float>()[i] = static_cast<float>(randint(g, 0, 15));
  }
  if (s.sorted) {
    std::vector<int32_t> perm = iota_i32(static_cast<int32_t>(s.in));
    std::shuffle(perm.begin(), perm.end(), g);
    q->input_order = Tensor::empty(DType::I32, {s.in});
    std::copy(perm.begin(), perm.end(), q->input_order.data<int32_t>());
  }
  return Weight(codes, q);
}

Tensor run(const char* vendor, const Tensor& x, const Weight& w) {
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), vendor, DType::U8);
  Tensor out = Tensor::empty(DType::F32, {x.size(0), w.rows()});
  k.fn(LinearArgs{x, w.values, {}, out, MatmulPrecision::Int8, w.quant.get()});
  return out;
}

TEST(CpuInt4Int8, ReferenceBitsOnEveryPathAndBatch) {
  CpuPathGuard guard;
  std::mt19937 g(31);
  const Shape shapes[] = {
      {2048, 70, 128, false, false},  // GPTQ's usual; 70 weight rows: tiles of 4 and 2 columns with tails
      {768, 33, 64, true, false},
      {1024, 18, 256, true, false},
      {320, 21, 128, false, false},  // a short last group (64 of 128): the AVX2 tile on every x86 tier
      {384, 21, 256, false, false},  // one of 128 in 256: the zmm tile's 128-channel chunk
      {512, 19, 64, true, true},     // act-order columns
      {512, 19, 128, true, true},
      {1024, 13, 512, true, false},  // groups past the AVX2 tile's 4 chunks of s16 sums
      {640, 9, 320, false, false},
      {96, 11, 32, true, false},  // groups the tile does not take: the generic loop on every tier
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE("k " + std::to_string(s.in) + " group " + std::to_string(s.group));
    const Weight w = int4_weight(g, s);
    Tensor x = rand_f32(g, {37, s.in}, -1.0f, 1.0f);
    std::uniform_int_distribution<int> binade(-12, 4);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::ldexp(x.data<float>()[i], binade(g));
    x.data<float>()[5] = 0.0f;  // and a row of zeros, whose groups have no scale
    for (int64_t k = 0; k < s.in; ++k) x.data<float>()[3 * s.in + k] = 0.0f;
    const Tensor want = run(kReferenceVendor, x, w);
    for (const CpuPath& path : cpu_paths()) {
      SCOPED_TRACE(path.name);
      ASSERT_TRUE(select_path(path));
      const Tensor full = run(kCpuVendor, x, w);
      EXPECT_EQ(std::memcmp(full.raw(), want.raw(), full.nbytes()), 0);
      for (int64_t n = 1; n <= 9; ++n) {
        const Tensor few = run(kCpuVendor, x.slice_rows(0, n), w);
        EXPECT_EQ(std::memcmp(few.raw(), want.slice_rows(0, n).raw(), few.nbytes()), 0) << n << " rows";
      }
    }
  }
}

// The precision is opt-in and only changes weight-only int4: an int4 weight whose groups the loader could
// not make contiguous (group_of) keeps bf16 activations, as Quantized gives it.
TEST(CpuInt4Int8, UnsortableActOrderKeepsBf16Activations) {
  std::mt19937 g(32);
  const Weight w = make_quant_weight(g, DType::U8, 1, 24, 128);  // variant 1: a group_of map
  ASSERT_FALSE(w.quant->group_of.is_null());
  EXPECT_EQ(activation_form(MatmulPrecision::Int8, *w.quant), ActivationForm::Bf16);
  Tensor x = rand_f32(g, {3, 128});
  const auto k = resolve_kernel<OpType::Linear>(builtin_registry(), kCpuVendor, DType::U8);
  Tensor a = Tensor::empty(DType::F32, {3, 24}), b = Tensor::empty(DType::F32, {3, 24});
  k.fn(LinearArgs{x, w.values, {}, a, MatmulPrecision::Int8, w.quant.get()});
  k.fn(LinearArgs{x, w.values, {}, b, MatmulPrecision::Quantized, w.quant.get()});
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

}  // namespace
}  // namespace opchain::harness
