// .npy files: magic, header length, the header dict and the data it sizes.
#include "fuzz/fuzz_input.h"
#include "io/npy.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("array.npy", fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] { (void)read_npy_f32(path); });
  return 0;
}
