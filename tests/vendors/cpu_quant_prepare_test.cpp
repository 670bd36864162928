// The cpu vendor's int8 activation preparation on every SIMD path the machine has: the same codes,
// scale and code sum as quantize_row_int8 (the reference's rule), bit for bit, for row lengths with
// partial vectors, an all-zero row and values that round to the saturation edge.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

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
  for (cpu::Isa isa : {cpu::Isa::Avx2, cpu::Isa::Avx512, cpu::Isa::Amx}) {
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

}  // namespace
}  // namespace opchain
