// Malformed safetensors files fail with one clear error naming the file and tensor; nothing is read
// outside the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

class SafetensorsMalformed : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opchain-st-" + std::to_string(::getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes an 8-byte little-endian header length, the header text and `data_bytes` zero bytes.
  std::string write(const std::string& header, size_t data_bytes, std::optional<uint64_t> header_len = {}) {
    const std::string path = (dir_ / "model.safetensors").string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = header_len.value_or(header.size());
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
    out << header;
    out << std::string(data_bytes, '\0');
    return path;
  }
  std::string error_of(const std::string& path) {
    try {
      SafetensorsFile f(path);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(SafetensorsMalformed, TooShortForHeaderLength) {
  const std::string path = (dir_ / "model.safetensors").string();
  std::ofstream(path) << "abc";
  const std::string err = error_of(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("8-byte"), std::string::npos) << err;
}

TEST_F(SafetensorsMalformed, HeaderLengthPastEndOfFile) {
  const auto path = write(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4, 1ull << 40);
  EXPECT_NE(error_of(path).find("exceeds the file size"), std::string::npos) << error_of(path);
}

TEST_F(SafetensorsMalformed, HeaderNotJson) {
  const auto path = write("{not json", 0);
  EXPECT_NE(error_of(path).find("not valid JSON"), std::string::npos);
}

TEST_F(SafetensorsMalformed, OffsetsOutOfRangeNameTheTensor) {
  const auto path = write(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  const std::string err = error_of(path);
  EXPECT_NE(err.find("'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("outside the data section"), std::string::npos) << err;
}

TEST_F(SafetensorsMalformed, ReversedOffsets) {
  const auto path = write(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8);
  EXPECT_NE(error_of(path).find("'w'"), std::string::npos);
}

TEST_F(SafetensorsMalformed, SizeDisagreesWithShape) {
  const auto path = write(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(error_of(path).find("need 6"), std::string::npos) << error_of(path);
}

TEST_F(SafetensorsMalformed, OverlappingTensors) {
  const auto path = write(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      12);
  EXPECT_NE(error_of(path).find("overlap"), std::string::npos) << error_of(path);
}

// 2^40 x 2^40 x 2^40 wrapped to 0 in 64 bits, so the size check asked for 0 bytes, the empty range
// passed, and a kernel given the shape read far outside the mapping (SIGSEGV in the embedding).
TEST_F(SafetensorsMalformed, ShapeProductCannotWrap) {
  const std::string err = error_of(
      write(R"({"e":{"dtype":"F32","shape":[1099511627776,1099511627776,16777216],"data_offsets":[0,0]}})", 0));
  EXPECT_NE(err.find("'e'"), std::string::npos) << err;
  EXPECT_NE(err.find("over the limit of 17592186044416 elements"), std::string::npos) << err;
  // A zero dim does not hide an absurd product either.
  EXPECT_NE(error_of(write(R"({"e":{"dtype":"F32","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}})", 0))
                .find("over the limit"),
            std::string::npos);
  // Within the limit an empty tensor is fine.
  EXPECT_EQ(error_of(write(R"({"e":{"dtype":"F32","shape":[0,4096],"data_offsets":[0,0]}})", 0)), "");
}

// Sorted by offset, an empty tensor between two overlapping ones was the only neighbour compared.
TEST_F(SafetensorsMalformed, EmptyTensorDoesNotHideAnOverlap) {
  const auto path = write(R"({"a":{"dtype":"F32","shape":[25],"data_offsets":[0,100]},)"
                          R"("b":{"dtype":"F32","shape":[0],"data_offsets":[50,50]},)"
                          R"("c":{"dtype":"F32","shape":[15],"data_offsets":[60,120]}})",
                          120);
  const std::string err = error_of(path);
  EXPECT_NE(err.find("'a' and 'c' overlap"), std::string::npos) << err;
}

// dump() of a deeply nested field in the error message recursed once per level.
TEST_F(SafetensorsMalformed, DeeplyNestedHeaderIsRefusedBeforeParsing) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string err = error_of(write(R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})", 4));
  EXPECT_NE(err.find("nests deeper than 128 levels"), std::string::npos) << err;
}

TEST_F(SafetensorsMalformed, UnknownDtypeAndBadShape) {
  EXPECT_NE(error_of(write(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1)).find("unsupported dtype"),
            std::string::npos);
  EXPECT_NE(error_of(write(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)).find("bad shape"),
            std::string::npos);
  EXPECT_NE(error_of(write(R"({"a":{"dtype":"F32","shape":[1]}})", 4)).find("lacks"), std::string::npos);
}

TEST_F(SafetensorsMalformed, TruncatedRealFile) {
  const std::string src = test::model_dir("tiny-qwen3-moe") + "/model.safetensors";
  const std::string path = (dir_ / "model.safetensors").string();
  fs::copy_file(src, path);
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string err = error_of(path);
  EXPECT_NE(err.find("outside the data section"), std::string::npos) << err;
}

TEST(WeightStore, ShapeDtypeAndMissingTensorErrorsNameFileAndTensor) {
  WeightStore w(test::model_dir("tiny-qwen3-moe"));
  try {
    w.get("model.norm.weight", {65});
    FAIL();
  } catch (const FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model.norm.weight"), std::string::npos);
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos);
    EXPECT_NE(msg.find("[65]"), std::string::npos);
  }
  try {
    w.get("model.layers.9.mlp.gate.weight", {8, 64});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor 'model.layers.9.mlp.gate.weight'"), std::string::npos);
  }
  EXPECT_EQ(w.get("model.norm.weight", {64}).dtype(), DType::BF16);
  EXPECT_GT(w.total_bytes(), 0u);
}

TEST(WeightStore, NoWeightsInDirectory) { EXPECT_THROW(WeightStore(test::data_dir() + "/tokenizer"), FormatError); }

}  // namespace
}  // namespace opchain
