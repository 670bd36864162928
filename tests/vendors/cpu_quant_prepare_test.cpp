// The cpu vendor's activation preparation on every SIMD path the machine has. int8: the same codes,
// scale and code sum as quantize_row_int8 (the reference's rule), bit for bit, for row lengths with
// partial vectors, an all-zero row and values that round to the saturation edge. int4 on AVX-512 with
// groups of 128 channels (the wide chunk): the layout quant_simd.cpp defines and its group sums, bit
// for bit. fp8 (the tile's fused quantise-and-pack): quantize_row_fp8's scales and codes, in the tile's
// layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/quant.h"
#include "vendors/cpu/cpu_kernels.h"
#include "vendors/cpu/quant_simd.h"

namespace opchain {
namespace {

TEST(CpuQuantPrepare, Int8RowsEqualQuantizeRowInt8) {
  const cpu::Isa saved = cpu::active_isa();
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  int paths = 0;
  for (cpu::Isa isa : {cpu::Isa::Avx2, cpu::Isa::Avx512, cpu::Isa::Avx512Bf16, cpu::Isa::Amx}) {
    if (!cpu::isa_supported(isa) || !cpu::set_active_isa(isa)) continue;
    const cpu::QuantKernels* qk = cpu::quant_kernels();
    if (!qk || !qk->int8_prepare) continue;
    ++paths;
    for (int64_t k : {1, 7, 8, 15, 16, 17, 63, 64, 100, 768, 2049}) {
      for (int kind = 0; kind < 3; ++kind) {
        std::vector<float> x(static_cast<size_t>(k));
        for (float& v : x) v = kind == 1 ? 0.0f : u(g);
        if (kind == 2) x[static_cast<size_t>(k) / 2] = -1e6f;  // one huge value: everything else rounds to 0 or +-1
        std::vector<int8_t> want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
        const float want_scale = quantize_row_int8(x.data(), k, want.data());
        int32_t want_sum = 0;
        for (int8_t c : want) want_sum += c;
        int32_t got_sum = -1;
        const float got_scale = qk->int8_prepare(x.data(), k, got.data(), &got_sum);
        SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " k=" + std::to_string(k) + " kind=" + std::to_string(kind));
        EXPECT_EQ(std::memcmp(&want_scale, &got_scale, sizeof(float)), 0) << want_scale << " vs " << got_scale;
        EXPECT_EQ(want, got);
        EXPECT_EQ(want_sum, got_sum);
      }
    }
  }
  cpu::set_active_isa(saved);
  if (paths == 0) GTEST_SKIP() << "no SIMD int8 path on this machine";
}

// Vector j of each 128-channel chunk holds channels 4i + j, i < 32, rounded to bf16; a group's sum is
// 16 lanes, lane l over the channels l, l + 16, ... in order, then added as reduce_ps does.
TEST(CpuQuantPrepare, Int4WideRowsMatchTheirLayout) {
  const cpu::Isa saved = cpu::active_isa();
  std::mt19937 g(6);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  int paths = 0;
  for (cpu::Isa isa : {cpu::Isa::Avx512, cpu::Isa::Avx512Bf16, cpu::Isa::Amx}) {
    if (!cpu::isa_supported(isa) || !cpu::set_active_isa(isa)) continue;
    const cpu::QuantKernels* qk = cpu::quant_kernels();
    if (!qk || !qk->int4_prepare || qk->int4_x_bytes != 2) continue;
    ++paths;
    for (const auto [k, group] : {std::pair<int64_t, int64_t>{128, 128}, {2048, 128}, {768, 128}, {1024, 256}}) {
      std::vector<float> x(static_cast<size_t>(k));
      for (float& v : x) v = u(g);
      x[5] = -0.0f;
      std::vector<uint16_t> got(static_cast<size_t>(k));
      std::vector<float> sums(static_cast<size_t>(k / group));
      qk->int4_prepare(x.data(), k, group, got.data(), sums.data());
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " k=" + std::to_string(k) + " group=" + std::to_string(group));
      for (int64_t c = 0; c < k; c += 128)
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t i = 0; i < 32; ++i)
            ASSERT_EQ(got[static_cast<size_t>(c + 32 * j + i)], f32_to_bf16(x[static_cast<size_t>(c + 4 * i + j)]))
                << "chunk " << c << " vector " << j << " lane " << i;
      for (int64_t g0 = 0; g0 < k; g0 += group) {
        float lane[16] = {};
        for (int64_t ch = g0; ch < g0 + group; ++ch)
          lane[ch % 16] += bf16_to_f32(f32_to_bf16(x[static_cast<size_t>(ch)]));
        for (int w = 8; w >= 1; w /= 2)
          for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
        const float want = lane[0];
        EXPECT_EQ(std::memcmp(&want, &sums[static_cast<size_t>(g0 / group)], sizeof(float)), 0)
            << "group " << g0 / group << ": " << want << " vs " << sums[static_cast<size_t>(g0 / group)];
      }
    }
  }
  cpu::set_active_isa(saved);
  if (paths == 0) GTEST_SKIP() << "no AVX-512 int4 path on this machine";
}

// The fp8 tile's activation layout: word p of a chunk's vector v is channel 16 (p / 8) + p % 8 + 8 v,
// as bf16; every code value in every position. Then the fused quantise-and-pack against
// quantize_row_fp8 + that layout, bit for bit (scales too): group sizes 64 to the whole row, groups of
// very different magnitudes (one whose codes are mostly e4m3 subnormals), zeros of both signs, f32
// denormals, infinities (which saturate), NaN (code 0x7f, and left out of the group's amax).
TEST(CpuQuantPrepare, Fp8RowsEqualQuantizeRowFp8InTheTileLayout) {
  const cpu::Isa saved = cpu::active_isa();
  bool ran = false;
  for (cpu::Isa isa : {cpu::Isa::Avx512Bf16, cpu::Isa::Amx}) {
    if (!cpu::isa_supported(isa) || !cpu::set_active_isa(isa)) continue;
    const cpu::Fp8Kernels* fk = cpu::fp8_kernels();
    if (!fk) continue;
    const cpu::Fp8PackFn pack = fk->pack_codes;
    const cpu::Fp8PrepareFn prepare = fk->prepare;
    ran = true;
    std::mt19937 g(8);
    for (int rot = 0; rot < 4; ++rot) {
      const int64_t k = 256;
      std::vector<uint8_t> codes(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i) codes[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 37 + rot * 61) & 0xff);
      std::vector<uint16_t> got(static_cast<size_t>(k));
      pack(codes.data(), k, got.data());
      for (int64_t c0 = 0; c0 < k; c0 += cpu::kFp8Chunk)
        for (int64_t v = 0; v < 2; ++v)
          for (int64_t p = 0; p < 32; ++p) {
            const uint8_t code = codes[static_cast<size_t>(c0 + 16 * (p / 8) + p % 8 + 8 * v)];
            ASSERT_EQ(got[static_cast<size_t>(c0 + 32 * v + p)], f32_to_bf16(f8e4m3_to_f32(code)))
                << "code " << int{code} << " at word " << c0 + 32 * v + p;
          }
    }
    std::normal_distribution<float> n(0.0f, 1.0f);
    const float specials[] = {0.0f, -0.0f, 1e-42f, -3e-39f, INFINITY, -INFINITY, NAN, 448.0f, -1e30f};
    for (int64_t k : {64, 128, 192, 2048})
      for (int64_t group : {int64_t{64}, int64_t{128}, k}) {
        if (group > k) continue;
        for (int trial = 0; trial < 20; ++trial) {
          std::vector<float> x(static_cast<size_t>(k));
          for (int64_t i = 0; i < k; ++i) {
            const int64_t gi = i / group;
            x[static_cast<size_t>(i)] = n(g) * std::ldexp(1.0f, static_cast<int>((gi * 7 + trial) % 40) - 20);
          }
          if (trial % 2 == 1)  // a few large values: the rest of the group lands on e4m3 subnormals
            for (int64_t i = 0; i < k; i += 61) x[static_cast<size_t>(i)] *= 5000.0f;
          if (trial % 4 == 2)
            for (int64_t i = 0; i < k; i += 13) x[static_cast<size_t>(i)] = specials[(i / 13) % std::size(specials)];
          if (trial % 4 == 3) {  // amax 448 makes the scale 1: exact ties between e4m3 neighbours, both ways
            const float ties[] = {1.0625f,        1.1875f,       -1.3125f, 1.4375f, 0.0009765625f, 0.0029296875f,
                                  -0.0048828125f, 0.0068359375f, 3.25f,    3.75f,   208.0f,        432.0f};
            for (int64_t g0 = 0; g0 < k; g0 += group) {
              x[static_cast<size_t>(g0)] = 448.0f;
              for (size_t t = 0; t < std::size(ties) && g0 + 1 + static_cast<int64_t>(t) < k; ++t)
                x[static_cast<size_t>(g0) + 1 + t] = ties[t];
              for (int64_t i = g0 + 1 + static_cast<int64_t>(std::size(ties)); i < std::min(k, g0 + group); ++i)
                x[static_cast<size_t>(i)] = std::clamp(x[static_cast<size_t>(i)], -400.0f, 400.0f);
            }
          }
          const int64_t groups = (k + group - 1) / group;
          std::vector<uint8_t> want_codes(static_cast<size_t>(k));
          std::vector<float> want_scales(static_cast<size_t>(groups)), got_scales(static_cast<size_t>(groups));
          quantize_row_fp8(x.data(), k, group, want_codes.data(), want_scales.data());
          std::vector<uint16_t> want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
          pack(want_codes.data(), k, want.data());
          prepare(x.data(), k, group, got.data(), got_scales.data());
          ASSERT_EQ(std::memcmp(got_scales.data(), want_scales.data(), want_scales.size() * sizeof(float)), 0)
              << "k " << k << ", group " << group << ", trial " << trial;
          for (int64_t i = 0; i < k; ++i)
            ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)])
                << "word " << i << ", k " << k << ", group " << group << ", trial " << trial;
        }
      }
  }
  cpu::set_active_isa(saved);
  if (!ran) GTEST_SKIP() << "no fp8 tile on this machine (AVX-512 with BF16 and VBMI)";
}

}  // namespace
}  // namespace opchain
