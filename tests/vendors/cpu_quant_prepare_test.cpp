// The cpu vendor's activation preparation on every SIMD path the machine has. int8: the same codes,
// scale and code sum as quantize_row_int8 (the reference's rule), bit for bit, for row lengths with
// partial vectors, an all-zero row and values that round to the saturation edge. int4 on AVX-512 with
// groups of 128 channels (the wide chunk): the layout quant_simd.cpp defines and its group sums, bit
// for bit.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace opchain
