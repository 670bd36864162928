// tokenizer.json: vocabulary, merges, added tokens, normalizer, pre-tokenizer (regexes) and decoder;
// a tokenizer that loads then encodes and decodes a fixed text.
#include "fuzz/fuzz_input.h"
#include "io/tokenizer.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_ok_or_error([&] {
    const Tokenizer t = Tokenizer::from_json_text(std::string(fuzz::as_text(data, size)), "fuzz/tokenizer.json");
    const auto ids = t.encode("Hello, world! 123 <|im_start|>user\n  héllo\t世界");
    (void)t.decode(ids);
  });
  return 0;
}
