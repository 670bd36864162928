// OpenAI request bodies -> parameters, for both endpoints; a chat request that parses is rendered
// with the Qwen3 template, as the server does (request fields reach Jinja filters).
#include "fuzz/fuzz_input.h"
#include "io/chat_template.h"
#include "server/openai_protocol.h"

using namespace opchain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ChatTemplate t = ChatTemplate::from_model_dir(fuzz::test_data("tokenizer/qwen3"));
  const std::string_view body = fuzz::as_text(data, size);
  server::ProtocolLimits limits;
  limits.served_model = "qwen3";
  limits.max_context = 4096;
  for (const auto endpoint : {server::Endpoint::Chat, server::Endpoint::Completion}) {
    fuzz::expect_ok_or_error([&] {
      const server::ParsedRequest r = server::parse_request(body, endpoint, SamplingParams{}, limits);
      if (endpoint == server::Endpoint::Chat) (void)t.render(r.messages, r.tools, true, r.chat_template_kwargs);
    });
  }
  return 0;
}
