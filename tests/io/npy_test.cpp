// .npy files from outside: the reader checks every header value against the file before it
// allocates from it (issue 16).
#include "io/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

std::string write_npy(const std::string& name, const std::string& header, size_t data_bytes) {
  const std::string path =
      (fs::temp_directory_path() / ("opchain-npy-" + std::to_string(::getpid()) + "-" + name)).string();
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header << std::string(data_bytes, '\0');
  return path;
}

std::string error_of(const std::string& path) {
  try {
    read_npy_f32(path);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, RoundTrip) {
  const std::string path = (fs::temp_directory_path() / ("opchain-npy-rt-" + std::to_string(::getpid()))).string();
  const float data[6] = {1, 2, 3, 4, 5, 6};
  write_npy_f32(path, {2, 3}, data);
  const NpyArray a = read_npy_f32(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, std::vector<float>(data, data + 6));
  fs::remove(path);
}

// The shape was multiplied out and allocated before the data was looked at: a 100-byte file could
// ask for any amount of memory (or a wrapped product, or std::stoll's out_of_range).
TEST(Npy, ShapeIsCheckedAgainstTheFileBeforeAllocating) {
  const std::string big =
      write_npy("big", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000), }", 16);
  EXPECT_NE(error_of(big).find("needs more data than the file's 16 bytes"), std::string::npos) << error_of(big);
  const std::string wrap =
      write_npy("wrap", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }", 0);
  EXPECT_NE(error_of(wrap).find("needs more data"), std::string::npos) << error_of(wrap);
  const std::string huge =
      write_npy("huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 0);
  EXPECT_NE(error_of(huge).find("is not a tuple of sizes"), std::string::npos) << error_of(huge);
  const std::string neg = write_npy("neg", "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", 0);
  EXPECT_NE(error_of(neg).find("is not a tuple of sizes"), std::string::npos) << error_of(neg);
  for (const auto& p : {big, wrap, huge, neg}) fs::remove(p);
}

TEST(Npy, HeaderLengthIsBounded) {
  const std::string path = (fs::temp_directory_path() / ("opchain-npy-hdr-" + std::to_string(::getpid()))).string();
  std::ofstream(path, std::ios::binary).write("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  EXPECT_NE(error_of(path).find("header length 2147483647"), std::string::npos) << error_of(path);
  fs::remove(path);
}

}  // namespace
}  // namespace opchain
