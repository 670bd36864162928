// Linear layers read through quantization_config: every format written by io/quant_writer.h reads back
// to the weight it quantised (within its rounding), row selection and stacking keep each row's
// parameters, and every malformed file is one clear error naming the tensor and the rule. (That the
// files follow the published layouts is checked from outside: tests/quant.)
#include "io/linear_weights.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "io/quant_writer.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

class LinearWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opchain-lw-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // config.json with `quant` as quantization_config (or none), and the tensors as model.safetensors.
  void write(const std::vector<std::pair<TensorDecl, Tensor>>& tensors, const nlohmann::json& quant) {
    nlohmann::json config = {{"model_type", "test"}};
    if (!quant.is_null()) config["quantization_config"] = quant;
    std::ofstream(dir_ / "config.json") << config.dump();
    std::vector<TensorDecl> decls;
    std::map<std::string, Tensor> data;
    for (const auto& [d, t] : tensors) {
      decls.push_back(d);
      data[d.name] = t;
    }
    write_sharded_safetensors(dir_.string(), decls, 0, [&](const TensorDecl& d, SafetensorsWriter& w) {
      w.write(data[d.name].raw(), d.nbytes());
    });
  }

  // Writes layer "layer" in format `o` from W, returns the store.
  std::unique_ptr<WeightStore> write_layer(const QuantFormatOptions& o, const std::vector<float>& w, int64_t out,
                                           int64_t in) {
    const auto decls = quantized_linear_decls(o, "layer", out, in);
    const auto tensors = quantize_linear(o, w.data(), out, in);
    std::vector<std::pair<TensorDecl, Tensor>> items;
    for (size_t i = 0; i < decls.size(); ++i) items.push_back({decls[i], tensors[i]});
    write(items, quantization_config_json(o, {}));
    return std::make_unique<WeightStore>(dir_.string());
  }

  std::string load_error(int64_t out, int64_t in) {
    try {
      const WeightStore w(dir_.string());
      load_linear(w, "layer", out, in);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

std::vector<float> random_weight(int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> n(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (auto& x : w) x = n(g);
  return w;
}

Tensor f32(const std::vector<float>& v, const Shape& s) {
  Tensor t = Tensor::empty(DType::F32, s);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// The largest error relative to each row's largest weight, over the matrix.
float row_relative_error(const Tensor& deq, const std::vector<float>& w, int64_t out, int64_t in) {
  float worst = 0.0f;
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0.0f, err = 0.0f;
    for (int64_t k = 0; k < in; ++k) {
      amax = std::max(amax, std::fabs(w[o * in + k]));
      err = std::max(err, std::fabs(deq.data<float>()[o * in + k] - w[o * in + k]));
    }
    worst = std::max(worst, err / amax);
  }
  return worst;
}

struct RoundTripCase {
  const char* name;
  QuantFormatOptions o;
  float bound;  // half a code step of the coarsest group, relative to the row's largest weight
};

std::vector<RoundTripCase> round_trip_cases() {
  auto make = [](QuantFormat f, int64_t gs, bool sym, bool act, bool v2, DType scale) {
    QuantFormatOptions o;
    o.format = f;
    o.group_size = gs;
    o.symmetric = sym;
    o.act_order = act;
    o.gptq_v2 = v2;
    o.scale_dtype = scale;
    o.block_n = 16;
    o.block_k = 40;  // partial edge blocks in both directions of a 40 x 72 layer
    return o;
  };
  return {
      {"gptq sym v1", make(QuantFormat::Gptq, 24, true, false, false, DType::F16), 1.0f / 15 + 1e-3f},
      {"gptq asym v2 act-order", make(QuantFormat::Gptq, 24, false, true, true, DType::F16), 1.0f / 15 + 1e-3f},
      {"gptq asym v1 per-row", make(QuantFormat::Gptq, -1, false, false, false, DType::F32), 1.0f / 15 + 1e-3f},
      {"awq zero point", make(QuantFormat::Awq, 24, false, false, false, DType::F16), 1.0f / 15 + 1e-3f},
      {"awq symmetric", make(QuantFormat::Awq, 24, true, false, false, DType::BF16), 1.0f / 14 + 1e-2f},
      {"w8a8", make(QuantFormat::W8A8, 0, true, false, false, DType::BF16), 1.0f / 127 + 1e-2f},
      {"w4a16", make(QuantFormat::W4A16, 24, true, false, false, DType::BF16), 1.0f / 15 + 1e-2f},
      {"w4a16 asym act-order", make(QuantFormat::W4A16, 24, false, true, false, DType::F32), 1.0f / 15 + 1e-3f},
      {"fp8 block partial edges", make(QuantFormat::Fp8Block, 0, true, false, false, DType::BF16), 1.0f / 16 + 1e-2f},
  };
}

TEST_F(LinearWeights, EveryFormatReadsBackToTheWeightItQuantised) {
  const int64_t out = 40, in = 72;
  const std::vector<float> w = random_weight(out, in, 7);
  for (const auto& c : round_trip_cases()) {
    SCOPED_TRACE(c.name);
    auto store = write_layer(c.o, w, out, in);
    const Weight q = load_linear(*store, "layer", out, in);
    ASSERT_TRUE(q.quantized());
    EXPECT_EQ(q.rows(), out);
    EXPECT_EQ(q.cols(), in);
    EXPECT_LT(row_relative_error(dequantize(q), w, out, in), c.bound);
    // Rows keep their own parameters when selected: rows 8..16 and 32..40 of the dequantised whole.
    const Weight rows = load_linear_rows(*store, "layer", out, in, {{8, 16}, {32, 40}});
    const Tensor all = dequantize(q), part = dequantize(rows);
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t k = 0; k < in; ++k)
        ASSERT_EQ(part.data<float>()[r * in + k], all.data<float>()[((r < 8 ? 8 : 24) + r) * in + k]);
  }
}

// An act-order layer whose groups each hold group_size channels (as GPTQ's do) has its code columns
// sorted by group: column j holds channel input_order[j], whose g_idx is j / group_size, the codes moved
// with it. Row-parallel shards of it (select_cols) come back in channel order with their group map.
// A map with uneven groups cannot be sorted into whole groups and stays as group_of.
TEST_F(LinearWeights, ActOrderColumnsAreSortedByGroup) {
  QuantFormatOptions o;
  o.format = QuantFormat::Gptq;
  o.group_size = 24;
  o.symmetric = false;
  o.act_order = true;
  const int64_t out = 40, in = 72;
  const std::vector<float> w = random_weight(out, in, 11);
  const auto decls = quantized_linear_decls(o, "layer", out, in);
  auto tensors = quantize_linear(o, w.data(), out, in);
  size_t gi = 0;
  while (decls[gi].name != "layer.g_idx") ++gi;
  const std::vector<int32_t> g_idx(tensors[gi].data<int32_t>(), tensors[gi].data<int32_t>() + in);
  std::vector<std::pair<TensorDecl, Tensor>> items;
  for (size_t i = 0; i < decls.size(); ++i) items.push_back({decls[i], tensors[i]});
  write(items, quantization_config_json(o, {}));
  Tensor sorted_deq;
  {
    const WeightStore store(dir_.string());
    const Weight q = load_linear(store, "layer", out, in);
    ASSERT_FALSE(q.quant->input_order.is_null());
    EXPECT_TRUE(q.quant->group_of.is_null());
    const int32_t* order = q.quant->input_order.data<int32_t>();
    std::vector<int> seen(static_cast<size_t>(in), 0);
    for (int64_t j = 0; j < in; ++j) {
      ASSERT_GE(order[j], 0);
      ASSERT_LT(order[j], in);
      ++seen[static_cast<size_t>(order[j])];
      EXPECT_EQ(g_idx[static_cast<size_t>(order[j])], j / 24) << "column " << j;
      if (j > 0 && j % 24 != 0) EXPECT_LT(order[j - 1], order[j]) << "a group keeps its channels' order";
    }
    for (int64_t k = 0; k < in; ++k) EXPECT_EQ(seen[static_cast<size_t>(k)], 1) << "channel " << k;
    sorted_deq = dequantize(q);
    EXPECT_LT(row_relative_error(sorted_deq, w, out, in), 1.0f / 15 + 1e-3f);
    for (const auto [b, e] : {std::pair<int64_t, int64_t>{0, 36}, {36, 72}, {10, 47}}) {
      const Weight shard = select_cols(q, b, e);
      EXPECT_TRUE(shard.quant->input_order.is_null());
      ASSERT_FALSE(shard.quant->group_of.is_null());
      EXPECT_EQ(shard.cols(), e - b);
      const Tensor part = dequantize(shard);
      for (int64_t r = 0; r < out; ++r)
        for (int64_t k = b; k < e; ++k)
          ASSERT_EQ(part.data<float>()[r * (e - b) + k - b], sorted_deq.data<float>()[r * in + k])
              << "row " << r << ", channel " << k << ", shard [" << b << ", " << e << ")";
    }
  }
  // Channel c moves from its group to another: one group of 25, one of 23.
  int64_t c = 0, other = 0;
  while (g_idx[static_cast<size_t>(other)] == g_idx[static_cast<size_t>(c)]) ++other;
  tensors[gi].data<int32_t>()[c] = g_idx[static_cast<size_t>(other)];
  items.clear();
  for (size_t i = 0; i < decls.size(); ++i) items.push_back({decls[i], tensors[i]});
  write(items, quantization_config_json(o, {}));
  const WeightStore store(dir_.string());
  const Weight q = load_linear(store, "layer", out, in);
  EXPECT_TRUE(q.quant->input_order.is_null());
  ASSERT_FALSE(q.quant->group_of.is_null());
  const Tensor uneven = dequantize(q);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k)
      if (k != c) ASSERT_EQ(uneven.data<float>()[r * in + k], sorted_deq.data<float>()[r * in + k]);
}

TEST_F(LinearWeights, ActivationsFollowTheFormat) {
  const std::vector<float> w = random_weight(16, 64, 3);
  auto act_of = [&](QuantFormat f) {
    QuantFormatOptions o;
    o.format = f;
    o.group_size = 32;
    auto store = write_layer(o, w, 16, 64);
    return load_linear(*store, "layer", 16, 64).quant->act;
  };
  EXPECT_EQ(act_of(QuantFormat::W8A8), ActQuant::Int8Token);
  EXPECT_EQ(act_of(QuantFormat::Fp8Block), ActQuant::Fp8Group);
  EXPECT_EQ(act_of(QuantFormat::Gptq), ActQuant::None);
  EXPECT_EQ(act_of(QuantFormat::W4A16), ActQuant::None);
}

TEST_F(LinearWeights, DenseLayersOfAQuantisedCheckpointStayDense) {
  const std::vector<float> w = random_weight(8, 16, 1);
  QuantFormatOptions o;
  o.format = QuantFormat::Gptq;
  write({{TensorDecl{"layer.weight", DType::F32, {8, 16}}, f32(w, {8, 16})}}, quantization_config_json(o, {"layer"}));
  const WeightStore store(dir_.string());
  const Weight d = load_linear(store, "layer", 8, 16);
  EXPECT_FALSE(d.quantized());
  EXPECT_EQ(d.values.dtype(), DType::F32);
}

TEST_F(LinearWeights, MalformedGptqNamesTheTensorAndTheRule) {
  QuantFormatOptions o;
  o.format = QuantFormat::Gptq;
  o.group_size = 16;
  const std::vector<float> w = random_weight(16, 32, 2);
  const auto decls = quantized_linear_decls(o, "layer", 16, 32);
  const auto tensors = quantize_linear(o, w.data(), 16, 32);
  auto with = [&](const std::string& name, const TensorDecl& d, const Tensor& t) {
    std::vector<std::pair<TensorDecl, Tensor>> items;
    for (size_t i = 0; i < decls.size(); ++i)
      if (decls[i].name == name) {
        if (!d.name.empty()) items.push_back({d, t});
      } else {
        items.push_back({decls[i], tensors[i]});
      }
    write(items, quantization_config_json(o, {}));
  };
  Tensor qw = Tensor::empty(DType::I32, {2, 16});
  std::fill_n(qw.data<int32_t>(), 32, 0);
  with("layer.qweight", {"layer.qweight", DType::I32, {2, 16}}, qw);
  std::string e = load_error(16, 32);
  EXPECT_NE(e.find("'layer.qweight'"), std::string::npos) << e;
  EXPECT_NE(e.find("expected [4, 16]"), std::string::npos) << e;

  Tensor sc = Tensor::empty(DType::F16, {3, 16});
  std::fill_n(sc.data<uint16_t>(), 48, f32_to_f16(0.01f));
  with("layer.scales", {"layer.scales", DType::F16, {3, 16}}, sc);
  e = load_error(16, 32);
  EXPECT_NE(e.find("'layer.scales'"), std::string::npos) << e;
  EXPECT_NE(e.find("group_size 16, so 2 groups"), std::string::npos) << e;

  with("layer.qzeros", {}, {});
  e = load_error(16, 32);
  EXPECT_NE(e.find("no tensor 'layer.qzeros'"), std::string::npos) << e;

  Tensor g = Tensor::empty(DType::I32, {32});
  for (int k = 0; k < 32; ++k) g.data<int32_t>()[k] = k == 5 ? 7 : k / 16;
  with("layer.g_idx", {"layer.g_idx", DType::I32, {32}}, g);
  e = load_error(16, 32);
  EXPECT_NE(e.find("maps input channel 5 to group 7"), std::string::npos) << e;

  Tensor nan_scales = Tensor::empty(DType::F16, {2, 16});
  std::fill_n(nan_scales.data<uint16_t>(), 32, f32_to_f16(0.01f));
  nan_scales.data<uint16_t>()[3] = 0x7e00;
  with("layer.scales", {"layer.scales", DType::F16, {2, 16}}, nan_scales);
  e = load_error(16, 32);
  EXPECT_NE(e.find("non-finite scale at element 3"), std::string::npos) << e;

  Tensor float_qweight = Tensor::empty(DType::F32, {4, 16});
  with("layer.qweight", {"layer.qweight", DType::F32, {4, 16}}, float_qweight);
  e = load_error(16, 32);
  EXPECT_NE(e.find("has dtype f32, expected i32"), std::string::npos) << e;

  with("layer.qweight", {"layer.qweight", DType::I32, {4, 16}}, tensors[0]);
  e = load_error(12, 32);  // the model wants 12 outputs: not a multiple of 8
  EXPECT_NE(e.find("must be a multiple of 8"), std::string::npos) << e;
}

TEST_F(LinearWeights, MalformedCompressedTensorsAndFp8) {
  QuantFormatOptions o;
  o.format = QuantFormat::W4A16;
  o.group_size = 16;
  const std::vector<float> w = random_weight(16, 32, 4);
  {
    const auto decls = quantized_linear_decls(o, "layer", 16, 32);
    auto tensors = quantize_linear(o, w.data(), 16, 32);
    std::vector<std::pair<TensorDecl, Tensor>> items;
    for (size_t i = 0; i < decls.size(); ++i) {
      if (decls[i].name == "layer.weight_shape") tensors[i].data<int64_t>()[1] = 30;
      items.push_back({decls[i], tensors[i]});
    }
    write(items, quantization_config_json(o, {}));
    const std::string e = load_error(16, 32);
    EXPECT_NE(e.find("'layer.weight_shape'"), std::string::npos) << e;
    EXPECT_NE(e.find("says [16, 30]"), std::string::npos) << e;
  }
  {
    o.format = QuantFormat::Fp8Block;
    o.block_n = o.block_k = 16;
    Tensor codes = Tensor::empty(DType::I8, {16, 32});
    Tensor scales = Tensor::empty(DType::F32, {1, 2});
    write({{TensorDecl{"layer.weight", DType::I8, {16, 32}}, codes},
           {TensorDecl{"layer.weight_scale_inv", DType::F32, {1, 2}}, scales}},
          quantization_config_json(o, {}));
    const std::string e = load_error(16, 32);
    EXPECT_NE(e.find("'layer.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("expected f8e4m3"), std::string::npos) << e;
  }
  {
    Tensor codes = Tensor::empty(DType::F8E4M3, {16, 32});
    Tensor scales = Tensor::empty(DType::F32, {2, 2});
    std::fill_n(scales.data<float>(), 4, 1.0f);
    write({{TensorDecl{"layer.weight", DType::F8E4M3, {16, 32}}, codes},
           {TensorDecl{"layer.weight_scale_inv", DType::F32, {2, 2}}, scales}},
          quantization_config_json(o, {}));
    const std::string e = load_error(16, 32);
    EXPECT_NE(e.find("'layer.weight_scale_inv'"), std::string::npos) << e;
    EXPECT_NE(e.find("expected [1, 2]"), std::string::npos) << e;  // ceil(16 / 16) x ceil(32 / 16) blocks
  }
}

TEST_F(LinearWeights, QuantisedTensorsWithoutAConfigOrExcludedAreErrors) {
  Tensor codes = Tensor::empty(DType::F8E4M3, {16, 32});
  write({{TensorDecl{"layer.weight", DType::F8E4M3, {16, 32}}, codes}}, nullptr);
  std::string e = load_error(16, 32);
  EXPECT_NE(e.find("no quantization_config"), std::string::npos) << e;

  QuantFormatOptions o;
  o.format = QuantFormat::Fp8Block;
  write({{TensorDecl{"layer.weight", DType::F8E4M3, {16, 32}}, codes}}, quantization_config_json(o, {"layer"}));
  e = load_error(16, 32);
  EXPECT_NE(e.find("left unquantised"), std::string::npos) << e;

  o.format = QuantFormat::W8A8;
  nlohmann::json q = quantization_config_json(o, {});
  q["config_groups"]["group_0"]["targets"] = {"re:.*down_proj$"};
  Tensor i8 = Tensor::empty(DType::I8, {16, 32});
  write({{TensorDecl{"layer.weight", DType::I8, {16, 32}}, i8}}, q);
  e = load_error(16, 32);
  EXPECT_NE(e.find("matches no config group"), std::string::npos) << e;
}

TEST_F(LinearWeights, StackingLayersWithDifferentGroupMapsIsAnError) {
  QuantFormatOptions o;
  o.format = QuantFormat::Gptq;
  o.group_size = 16;
  o.act_order = true;
  const std::vector<float> w = random_weight(16, 32, 5);
  std::vector<std::pair<TensorDecl, Tensor>> items;
  for (const std::string m : {"a", "b"}) {
    const auto decls = quantized_linear_decls(o, m, 16, 32);
    auto tensors = quantize_linear(o, w.data(), 16, 32);
    for (size_t i = 0; i < decls.size(); ++i) {
      if (m == "b" && decls[i].name == "b.g_idx") {  // two channels of different groups trade places
        int32_t* g = tensors[i].data<int32_t>();
        int j = 1;
        while (g[j] == g[0]) ++j;
        std::swap(g[0], g[j]);
      }
      items.push_back({decls[i], tensors[i]});
    }
  }
  write(items, quantization_config_json(o, {}));
  const WeightStore store(dir_.string());
  try {
    load_linear_stacked(store, {"a", "b"}, {{16, 32}, {16, 32}});
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("same input groups"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opchain
