// Jinja templates, parsed and rendered. The input is the template; after a 0x01 byte, if any, comes
// the render context as JSON (a fixed chat context otherwise).
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_input.h"
#include "io/jinja.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const size_t split = input.find('\x01');
  const std::string source(input.substr(0, split));
  static const nlohmann::ordered_json chat = nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"<think>x</think>Hello",
          "tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}],"tools":[{"type":"function"}],
          "add_generation_prompt":true,"bos_token":"<s>","n":3,"s":"abc","l":[3,1,2]})");
  nlohmann::ordered_json context = chat;
  if (split != std::string_view::npos) {
    context = nlohmann::ordered_json::parse(input.substr(split + 1), nullptr, false);
    if (context.is_discarded()) return 0;
  }
  fuzz::expect_ok_or_error([&] {
    const jinja::Template t = jinja::Template::parse(source, jinja::Options{true, true, false});
    (void)t.render(context);
  });
  return 0;
}
