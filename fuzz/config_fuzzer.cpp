// config.json: the model configuration and its quantization_config.
#include "fuzz/fuzz_input.h"
#include "io/hf_config.h"
#include "io/quant_config.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] { (void)parse_model_config(text, "fuzz/config.json"); });
  fuzz::expect_ok_or_error([&] { (void)parse_quant_config(text, "fuzz/config.json"); });
  return 0;
}
