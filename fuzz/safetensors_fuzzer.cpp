// safetensors files: the 8-byte header length, the JSON header and the offsets it gives.
#include "fuzz/fuzz_input.h"
#include "io/safetensors.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("model.safetensors", fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] {
    SafetensorsFile f(path);
    // Touch every byte a view claims: an entry the checks let through must lie inside the mapping.
    volatile unsigned char sink = 0;
    for (const auto& [name, e] : f.entries()) {
      const Tensor t = f.bytes(name);
      const auto* p = static_cast<const unsigned char*>(t.raw());
      for (size_t i = 0; i < t.nbytes(); i += 4096) sink = sink ^ p[i];
      if (t.nbytes() > 0) sink = sink ^ p[t.nbytes() - 1];
    }
  });
  return 0;
}
