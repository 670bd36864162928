// The Qwen3 tokenizer over arbitrary bytes: encode (with and without special tokens), then decode
// the ids and arbitrary ids read from the input.
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "io/tokenizer.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizer t = Tokenizer::from_file(fuzz::test_data("tokenizer/qwen3/tokenizer.json"));
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_ok_or_error([&] {
    const auto ids = t.encode(text, true);
    (void)t.decode(ids, false);
    (void)t.decode(t.encode(text, false), true);
    std::vector<int32_t> raw(size / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
    (void)t.decode(raw, false);
  });
  return 0;
}
