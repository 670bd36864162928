// model.safetensors.index.json: the weight_map naming shards, next to one valid shard.
#include <filesystem>

#include "fuzz/fuzz_input.h"
#include "io/safetensors.h"

using namespace opchain;

namespace {

const std::string& model_dir() {
  static const std::string dir = [] {
    const auto d = fuzz::scratch_dir() / "indexed";
    std::filesystem::create_directories(d);
    // One valid shard holding "w" (f32, [2]) for the index to point at.
    const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    std::string shard(8, '\0');
    for (int i = 0; i < 8; ++i) shard[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    shard += header + std::string(8, '\0');
    fuzz::write_scratch("indexed/model-00001-of-00001.safetensors", shard);
    return d.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = model_dir();
  fuzz::write_scratch("indexed/model.safetensors.index.json", fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] {
    WeightStore w(dir);
    for (const auto& name : w.names()) (void)w.get_bytes(name);
  });
  return 0;
}
