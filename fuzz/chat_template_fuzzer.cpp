// The real Qwen3 chat template over an arbitrary conversation: the input is a JSON object with
// "messages", "tools" and extra template kwargs (or just a messages array).
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_input.h"
#include "io/chat_template.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ChatTemplate t = ChatTemplate::from_model_dir(fuzz::test_data("tokenizer/qwen3"));
  auto j = nlohmann::ordered_json::parse(fuzz::as_text(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  fuzz::expect_ok_or_error([&] {
    if (j.is_object()) {
      nlohmann::ordered_json messages = j.contains("messages") ? j["messages"] : nlohmann::ordered_json::array();
      nlohmann::ordered_json tools = j.contains("tools") ? j["tools"] : nlohmann::ordered_json();
      nlohmann::ordered_json kwargs = j.contains("kwargs") ? j["kwargs"] : nlohmann::ordered_json();
      (void)t.render(messages, tools, true, kwargs);
    } else {
      (void)t.render(j, nullptr, false, nullptr);
    }
  });
  return 0;
}
