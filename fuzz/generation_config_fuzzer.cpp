// generation_config.json: default sampling parameters and eos ids.
#include "engine/generation_config.h"
#include "fuzz/fuzz_input.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::write_scratch("generation_config.json", fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] { (void)load_generation_defaults(fuzz::scratch_dir().string(), {2}); });
  return 0;
}
