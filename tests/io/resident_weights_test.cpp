// Note [Resident weights] (io/safetensors.h): eligible tensors are copied on first use into aligned
// memory of the process's own, with their bytes unchanged; the rest stay views into the mapping; and the
// load-time choice between the two.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "engine/loaded_model.h"
#include "io/safetensors.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

class ResidentWeights : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opchain-resident-" + std::to_string(::getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // A header padded so the data section starts 24 bytes past a cache line, as files written by the
    // safetensors library (header padded to 8) commonly do: a view into the mapping is misaligned.
    std::string header = R"({"big":{"dtype":"BF16","shape":[256,256],"data_offsets":[0,131072]},)"
                         R"("small":{"dtype":"F32","shape":[4],"data_offsets":[131072,131088]},)"
                         R"("codes":{"dtype":"I32","shape":[128,256],"data_offsets":[131088,262160]}})";
    while ((8 + header.size()) % 64 != 24) header += ' ';
    std::ofstream out(dir_ / "model.safetensors", std::ios::binary);
    const uint64_t len = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
    out << header;
    for (size_t i = 0; i < 262160; ++i) out.put(static_cast<char>((i * 7 + i / 251) & 0xff));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ResidentWeights, EligibleTensorsAreAlignedCopiesWithTheFilesBytes) {
  WeightStore mapped(dir_.string()), resident(dir_.string());
  EXPECT_EQ(resident.resident_bytes(), 131072u);  // only "big": "small" is small, "codes" are int32 codes
  resident.make_resident();
  const Tensor in_file = mapped.get("big", {256, 256});
  ASSERT_NE(reinterpret_cast<uintptr_t>(in_file.raw()) % 64, 0u) << "the fixture meant a misaligned mapping";
  const Tensor big = resident.get("big", {256, 256});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.raw()) % 64, 0u);
  EXPECT_NE(big.raw(), resident.get_bytes("big").raw()) << "a copy, not the mapping";
  EXPECT_EQ(big.dtype(), DType::BF16);
  EXPECT_EQ(std::memcmp(big.raw(), in_file.raw(), in_file.nbytes()), 0);
  EXPECT_EQ(resident.get("big", {256, 256}).raw(), big.raw()) << "one copy however often it is asked for";
  resident.map_in("big");
  resident.release("big");  // drops mapped pages only: the copy stays readable
  EXPECT_EQ(std::memcmp(resident.get("big", {256, 256}).raw(), in_file.raw(), in_file.nbytes()), 0);
  EXPECT_EQ(resident.get("small", {4}).raw(), resident.get_bytes("small").raw());
  EXPECT_EQ(resident.get_any_shape("codes").raw(), resident.get_bytes("codes").raw());
}

TEST(WeightResidencyChoice, SingleProcessCopiesWhatFitsAndExplainsEveryCase) {
  const size_t gb = size_t{1} << 30;
  EXPECT_TRUE(choose_weight_residency(6 * gb, 20 * gb, 1, 1, nullptr).resident);
  const WeightResidency big = choose_weight_residency(16 * gb, 20 * gb, 1, 1, nullptr);
  EXPECT_FALSE(big.resident);
  EXPECT_NE(big.why.find("3/4"), std::string::npos) << big.why;
  EXPECT_FALSE(choose_weight_residency(6 * gb, 0, 1, 1, nullptr).resident);  // memory unknown
  const WeightResidency tp = choose_weight_residency(6 * gb, 20 * gb, 2, 1, "resident");
  EXPECT_FALSE(tp.resident);
  EXPECT_NE(tp.why.find("shard"), std::string::npos) << tp.why;
  EXPECT_FALSE(choose_weight_residency(6 * gb, 20 * gb, 1, 4, nullptr).resident);
  EXPECT_FALSE(choose_weight_residency(6 * gb, 20 * gb, 1, 1, "mapped").resident);
  EXPECT_TRUE(choose_weight_residency(16 * gb, 20 * gb, 1, 1, "resident").resident);
  EXPECT_FALSE(choose_weight_residency(0, 20 * gb, 1, 1, nullptr).resident);
  try {
    choose_weight_residency(gb, 20 * gb, 1, 1, "yes");
    ADD_FAILURE() << "an unknown OPCHAIN_WEIGHTS value was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'yes'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opchain
