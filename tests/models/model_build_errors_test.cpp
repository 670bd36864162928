// Model build fails before the first token, with the file, tensor or op named: a vendor that lacks a
// kernel for the model's dtype, a missing tensor, a tensor of the wrong shape or dtype.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "engine/loaded_model.h"
#include "io/safetensors_writer.h"
#include "test_paths.h"
#include "vendors/reference/reference_kernels.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

void noop_rms_norm(const RmsNormArgs&) {}

TEST(ModelBuild, VendorWithoutTheKernelFailsAtBuildNamingEverything) {
  Registry reg;
  register_reference_kernels(reg);
  reg.add<OpType::RmsNorm>("partial", DType::F32, noop_rms_norm, "partial::rms_norm");
  const std::string dir = test::model_dir("tiny-qwen3-moe");
  const ModelConfig cfg = load_model_config(dir);
  WeightStore weights(dir);
  DeviceContext dev;
  dev.vendor = "partial";
  dev.registry = &reg;
  try {
    build_model(cfg, weights, dev);
    FAIL() << "build should fail";
  } catch (const UnsupportedOpError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no kernel for embedding(bf16) on vendor 'partial'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("key 'embedding'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reference: f32, f16, bf16"), std::string::npos) << msg;
  }
}

// Rewrites tiny-qwen3-moe's weights with one tensor dropped, reshaped or retyped.
class BrokenWeights : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opchain-broken-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    fs::copy_file(test::model_dir("tiny-qwen3-moe") + "/config.json", dir_ / "config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  enum class Break { Drop, Reshape, Retype };
  void write_with(const std::string& victim, Break how) {
    WeightStore src(test::model_dir("tiny-qwen3-moe"));
    std::vector<TensorDecl> decls;
    for (const auto& name : src.names()) {
      Tensor t = src.get_any_shape(name);
      if (name == victim && how == Break::Drop) continue;
      TensorDecl d{name, t.dtype(), t.shape()};
      if (name == victim && how == Break::Reshape) d.shape = Shape{t.numel()};
      if (name == victim && how == Break::Retype) d.dtype = DType::I32;  // same shape, integer elements
      decls.push_back(d);
    }
    write_sharded_safetensors(dir_.string(), decls, 0, [&](const TensorDecl& d, SafetensorsWriter& w) {
      Tensor t = src.get_any_shape(d.name);
      std::vector<char> bytes(d.nbytes(), 0);
      std::memcpy(bytes.data(), t.raw(), std::min(bytes.size(), t.nbytes()));
      w.write(bytes.data(), bytes.size());
    });
  }
  std::string load_error() {
    try {
      load_model(dir_.string(), "cpu");
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(BrokenWeights, MissingTensor) {
  write_with("model.layers.1.mlp.experts.3.down_proj.weight", Break::Drop);
  const auto err = load_error();
  EXPECT_NE(err.find("missing tensor 'model.layers.1.mlp.experts.3.down_proj.weight'"), std::string::npos) << err;
}

TEST_F(BrokenWeights, WrongShape) {
  write_with("model.layers.0.self_attn.k_proj.weight", Break::Reshape);
  const auto err = load_error();
  EXPECT_NE(err.find("'model.layers.0.self_attn.k_proj.weight'"), std::string::npos) << err;
  EXPECT_NE(err.find("expected [32, 64]"), std::string::npos) << err;
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
}

TEST_F(BrokenWeights, WrongDtype) {
  write_with("model.norm.weight", Break::Retype);
  const auto err = load_error();
  EXPECT_NE(err.find("'model.norm.weight'"), std::string::npos) << err;
  EXPECT_NE(err.find("i32"), std::string::npos) << err;
}

}  // namespace
}  // namespace opchain
