// The streaming safetensors writer, checked by reading its files back through SafetensorsFile and
// WeightStore: bytes, dtypes, shapes, header alignment, shard layout and every misuse error.
#include "io/safetensors_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "io/safetensors.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("opchain-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Byte i of a tensor's data: a pattern that differs per tensor, so a swapped tensor shows.
unsigned char pattern(const std::string& name, size_t i) {
  return static_cast<unsigned char>(i * 31 + name.size() * 7 + static_cast<unsigned char>(name.back()));
}

std::vector<char> pattern_bytes(const TensorDecl& t) {
  std::vector<char> out(t.nbytes());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(pattern(t.name, i));
  return out;
}

// Writes in uneven pieces so chunked writes within one tensor are exercised.
void fill_pattern(const TensorDecl& t, SafetensorsWriter& w) {
  const auto bytes = pattern_bytes(t);
  size_t done = 0, piece = 3;
  while (done < bytes.size()) {
    const size_t n = std::min(piece, bytes.size() - done);
    w.write(bytes.data() + done, n);
    done += n;
    piece = piece * 2 + 1;
  }
}

std::vector<TensorDecl> sample_tensors() {
  return {{"zeta.weight", DType::F32, {3, 5}},
          {"alpha.bias", DType::BF16, {7}},
          {"empty", DType::F32, {0, 4}},
          {"mid.ids", DType::I32, {2, 2, 2}},
          {"beta.scalar", DType::F32, {}}};
}

void expect_tensor_bytes(const Tensor& got, const TensorDecl& want) {
  ASSERT_EQ(got.dtype(), want.dtype) << want.name;
  ASSERT_TRUE(got.shape() == want.shape) << want.name << " " << got.shape().str();
  const auto bytes = pattern_bytes(want);
  ASSERT_EQ(got.nbytes(), bytes.size()) << want.name;
  if (!bytes.empty()) {
    EXPECT_EQ(std::memcmp(got.raw(), bytes.data(), bytes.size()), 0) << want.name;
  }
}

TEST(SafetensorsWriter, RoundTripsThroughReader) {
  TempDir dir("st-roundtrip");
  const std::string path = (dir.path / "t.safetensors").string();
  const auto decls = sample_tensors();
  {
    SafetensorsWriter w(path, decls, {{"format", "pt"}});
    // Name order, whatever the declaration order.
    std::vector<std::string> order;
    for (const auto& t : w.tensors()) order.push_back(t.name);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    for (const auto& t : w.tensors()) fill_pattern(t, w);
    EXPECT_EQ(w.current(), nullptr);
    w.finish();
  }
  EXPECT_EQ(fs::file_size(path), SafetensorsWriter::file_size(decls, {{"format", "pt"}}));
  SafetensorsFile f(path);
  ASSERT_EQ(f.entries().size(), decls.size());
  for (const auto& d : decls) expect_tensor_bytes(f.tensor(d.name), d);
  // The data section starts on a 64-byte boundary, and data offsets follow name order.
  std::ifstream in(path, std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ((8 + header_len) % 64, 0u);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  const auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  size_t last_end = 0;
  for (const auto& [name, e] : f.entries()) {
    EXPECT_EQ(e.begin, last_end) << name;
    last_end = e.end;
  }
}

TEST(SafetensorsWriter, RejectsMisuseWithTheTensorNamed) {
  TempDir dir("st-misuse");
  const std::string path = (dir.path / "t.safetensors").string();
  EXPECT_THROW(SafetensorsWriter(path, {{"a", DType::F32, {1}}, {"a", DType::F32, {2}}}), InvalidArgumentError);
  EXPECT_THROW(SafetensorsWriter(path, {{"__metadata__", DType::F32, {1}}}), InvalidArgumentError);
  {
    SafetensorsWriter w(path, {{"a", DType::F32, {2}}, {"b", DType::F32, {1}}});
    const float three[3] = {1, 2, 3};
    try {
      w.write(three, sizeof three);  // crosses from 'a' into 'b' in one call
      FAIL() << "overrun not detected";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    }
    w.write(three, 2 * sizeof(float));
    try {
      w.finish();
      FAIL() << "incomplete file not detected";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << e.what();
    }
  }
  // An unfinished writer leaves no partial file behind.
  EXPECT_FALSE(fs::exists(path));
  try {
    SafetensorsWriter w((dir.path / "no-such-dir" / "t.safetensors").string(), {{"a", DType::F32, {1}}});
    FAIL() << "unwritable path accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
  }
}

TEST(SafetensorsWriter, SingleFileWhenUnderTheShardLimit) {
  TempDir dir("st-single");
  const auto r = write_sharded_safetensors(dir.path.string(), sample_tensors(), 1 << 20, fill_pattern);
  ASSERT_EQ(r.files, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(fs::exists(dir.path / "model.safetensors.index.json"));
  WeightStore store(dir.path.string());
  for (const auto& d : sample_tensors()) expect_tensor_bytes(store.get_any_shape(d.name), d);
}

TEST(SafetensorsWriter, ShardsWithIndexLoadedByWeightStore) {
  TempDir dir("st-sharded");
  std::vector<TensorDecl> decls;
  for (int i = 0; i < 10; ++i)
    decls.push_back({"layer." + std::to_string(i) + ".weight", DType::BF16, {16, 8}});  // 256 B each
  decls.push_back({"big.weight", DType::F32, {64, 8}});  // 2 KiB: over the limit, a shard of its own
  const auto r = write_sharded_safetensors(dir.path.string(), decls, 600, fill_pattern);
  ASSERT_GT(r.files.size(), 2u);
  for (size_t i = 0; i < r.files.size(); ++i) {
    char want[64];
    std::snprintf(want, sizeof want, "model-%05zu-of-%05zu.safetensors", i + 1, r.files.size());
    EXPECT_EQ(r.files[i], want);
    EXPECT_TRUE(fs::exists(dir.path / r.files[i]));
  }
  EXPECT_FALSE(fs::exists(dir.path / "model.safetensors"));
  std::ifstream in(dir.path / "model.safetensors.index.json");
  const auto index = nlohmann::json::parse(in);
  size_t total = 0;
  for (const auto& d : decls) total += d.nbytes();
  EXPECT_EQ(index["metadata"]["total_size"].get<size_t>(), total);
  EXPECT_EQ(r.total_bytes, total);
  EXPECT_EQ(index["weight_map"].size(), decls.size());
  WeightStore store(dir.path.string());
  EXPECT_EQ(store.total_bytes(), total);
  for (const auto& d : decls) {
    expect_tensor_bytes(store.get_any_shape(d.name), d);
    // No shard but a lone oversized tensor's exceeds the limit.
    size_t shard_bytes = 0;
    SafetensorsFile f(store.file_of(d.name));
    for (const auto& [n, e] : f.entries()) shard_bytes += e.end - e.begin;
    EXPECT_TRUE(shard_bytes <= 600 || f.entries().size() == 1) << store.file_of(d.name);
  }
}

TEST(SafetensorsWriter, FillerThatWritesTooLittleIsCaught) {
  TempDir dir("st-short");
  auto short_fill = [](const TensorDecl& t, SafetensorsWriter& w) {
    std::vector<char> bytes(t.nbytes() - 1);
    w.write(bytes.data(), bytes.size());
  };
  try {
    write_sharded_safetensors(dir.path.string(), {{"x", DType::F32, {4}}}, 0, short_fill);
    FAIL() << "short filler accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path / "model.safetensors"));
}

}  // namespace
}  // namespace opchain
