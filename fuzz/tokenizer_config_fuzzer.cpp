// tokenizer_config.json: special tokens and the chat template it carries; a template that loads
// renders a fixed conversation.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_input.h"
#include "io/chat_template.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::write_scratch("tokenizer_config.json", fuzz::as_text(data, size));
  fuzz::expect_ok_or_error([&] {
    const ChatTemplate t = ChatTemplate::from_model_dir(fuzz::scratch_dir().string());
    static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}])");
    (void)t.render(messages, nullptr, true, nullptr);
  });
  return 0;
}
