// Request parsing and validation of the OpenAI API, and the shape of what the server sends back,
// without sockets: every rule a client can trip over maps to a status and a named parameter.
#include <gtest/gtest.h>

#include "server/openai_protocol.h"

#include "core/error.h"
#include "io/chat_template.h"

namespace opchain::server {
namespace {

ProtocolLimits limits() {
  ProtocolLimits l;
  l.served_model = "tiny";
  l.max_context = 512;
  l.serves_logprobs = l.serves_echo = true;
  return l;
}

ParsedRequest chat(const std::string& body, const SamplingParams& defaults = {}) {
  return parse_request(body, Endpoint::Chat, defaults, limits());
}
ParsedRequest completion(const std::string& body) { return parse_request(body, Endpoint::Completion, {}, limits()); }

// The ApiError a body raises (fails the test when it parses).
ApiError error_of(const std::string& body, Endpoint ep = Endpoint::Chat) {
  try {
    parse_request(body, ep, {}, limits());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ApiError for " << body;
  return ApiError(0, "none");
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(OpenAIProtocol, ParsesAMinimalChatRequestWithModelDefaults) {
  SamplingParams defaults;
  defaults.temperature = 0.7f;
  defaults.top_k = 20;
  const auto r = chat("{" + kMsgs + "}", defaults);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.7f);
  EXPECT_EQ(r.sampling.top_k, 20);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.n, 1);
  EXPECT_TRUE(r.tools.is_null());
}

TEST(OpenAIProtocol, RequestFieldsOverrideDefaults) {
  const auto r = chat(R"({"model": "tiny", )" + kMsgs +
                      R"(, "temperature": 0, "top_p": 0.5, "top_k": 3, "min_p": 0.1, "seed": -1,
                         "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
                         "max_tokens": 7, "stop": "END", "stream": true, "stream_options": {"include_usage": true},
                         "chat_template_kwargs": {"enable_thinking": false}, "n": 2})");
  EXPECT_EQ(r.model, "tiny");
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(-1));
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  EXPECT_EQ(r.n, 2);
}

TEST(OpenAIProtocol, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(chat("{" + kMsgs + R"(, "max_tokens": 9, "max_completion_tokens": 4})").max_tokens, 4);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "max_completion_tokens": 5})").max_tokens, 5);
}

TEST(OpenAIProtocol, StopTakesAStringOrAList) {
  EXPECT_EQ(chat("{" + kMsgs + R"(, "stop": ["a", "bc"]})").stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(chat("{" + kMsgs + R"(, "stop": null})").stop.empty());
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "stop": 3})").param(), "stop");
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "stop": ["a", 1]})").param(), "stop");
}

TEST(OpenAIProtocol, ContentPartsAreJoinedAndImagesRefused) {
  const auto r = chat(
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})");
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  const auto e =
      error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "unsupported_parameter");
}

TEST(OpenAIProtocol, MalformedBodiesAre400) {
  for (const std::string body : {"", "{", "not json", "[1, 2]", "\"text\"", "{\"messages\": [}"}) {
    const auto e = error_of(body);
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_EQ(e.type(), "invalid_request_error") << body;
  }
  EXPECT_EQ(error_of("{\"messages\": \"\xff\xfe\"}").status(), 400);  // invalid UTF-8
}

TEST(OpenAIProtocol, DeepNestingIsRefusedBeforeParsing) {
  const auto e = error_of(std::string(100000, '['));
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(std::string(e.what()).find("nests deeper"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(chat(R"({"messages": [{"role": "user", "content": ")" + std::string(1000, '[') + "\"}]}"));
}

TEST(OpenAIProtocol, MessagesAreRequiredAndChecked) {
  EXPECT_EQ(error_of("{}").param(), "messages");
  EXPECT_EQ(error_of(R"({"messages": []})").param(), "messages");
  EXPECT_EQ(error_of(R"({"messages": "hi"})").param(), "messages");
  EXPECT_EQ(error_of(R"({"messages": [1]})").param(), "messages[0]");
  EXPECT_EQ(error_of(R"({"messages": [{"content": "x"}]})").param(), "messages[0].role");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "wizard", "content": "x"}]})").param(), "messages[0].role");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user"}]})").param(), "messages[0].content");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": 5}]})").param(), "messages[0].content");
  // An assistant turn that only calls tools may have no content.
  EXPECT_NO_THROW(chat(R"({"messages": [{"role": "user", "content": "x"},
                                         {"role": "assistant", "tool_calls": [{"id": "1"}]}]})"));
}

TEST(OpenAIProtocol, WrongTypesNameTheirField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("temperature": "hot")", "temperature"},
      {R"("top_p": true)", "top_p"},
      {R"("top_k": 1.5)", "top_k"},
      {R"("max_tokens": "10")", "max_tokens"},
      {R"("max_tokens": 1.0)", "max_tokens"},
      {R"("seed": 1.5)", "seed"},
      {R"("stream": "yes")", "stream"},
      {R"("n": "2")", "n"},
      {R"("model": 7)", "model"},
      {R"("chat_template_kwargs": [])", "chat_template_kwargs"},
      {R"("tools": {})", "tools"},
      {R"("stream": true, "stream_options": 1)", "stream_options"},
  };
  for (const auto& [field, param] : cases) {
    const auto e = error_of("{" + kMsgs + ", " + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_EQ(e.param(), param) << field;
  }
}

TEST(OpenAIProtocol, OutOfRangeValuesAre400) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("max_tokens": 0)", "max_tokens"},
      {R"("max_tokens": -5)", "max_tokens"},
      {R"("max_tokens": 513)", "max_tokens"},
      {R"("max_completion_tokens": 100000000000)", "max_completion_tokens"},
      {R"("max_tokens": 99999999999999999999)", "max_tokens"},
      {R"("temperature": -0.1)", "temperature"},
      {R"("temperature": 2.5)", "temperature"},
      {R"("top_p": 0)", "top_p"},
      {R"("top_p": 1.01)", "top_p"},
      {R"("top_k": -2)", "top_k"},
      {R"("min_p": 1.5)", "min_p"},
      {R"("presence_penalty": 3)", "presence_penalty"},
      {R"("frequency_penalty": -2.5)", "frequency_penalty"},
      {R"("repetition_penalty": 0)", "repetition_penalty"},
      {R"("n": 0)", "n"},
      {R"("n": 17)", "n"},
  };
  for (const auto& [field, param] : cases) {
    const auto e = error_of("{" + kMsgs + ", " + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_EQ(e.param(), param) << field;
  }
}

TEST(OpenAIProtocol, UnknownModelIs404) {
  const auto e = error_of(R"({"model": "gpt-4", )" + kMsgs + "}");
  EXPECT_EQ(e.status(), 404);
  EXPECT_EQ(e.param(), "model");
  EXPECT_EQ(e.code(), "model_not_found");
}

const std::string kTools =
    R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";

TEST(OpenAIProtocol, UnsupportedFeaturesAreRefusedNotIgnored) {
  for (const std::string& field :
       {std::string(R"("logit_bias": {"1": 5})"), std::string(R"("min_tokens": 3)"), std::string(R"("best_of": 3)")}) {
    const auto e = error_of("{" + kMsgs + ", " + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_EQ(e.code(), "unsupported_parameter") << field;
  }
  EXPECT_EQ(error_of(R"({"prompt": "x", "echo": true, "logprobs": 2})", Endpoint::Completion).param(), "echo");
  EXPECT_EQ(error_of(R"({"prompt": "x", "suffix": "y"})", Endpoint::Completion).param(), "suffix");
  // The harmless spellings of "off" pass.
  EXPECT_NO_THROW(chat("{" + kMsgs + R"(, "logprobs": false, "logit_bias": {}, "response_format": {"type": "text"},
                                        "tool_choice": "auto", "best_of": 1, "user": "me"})"));
}

TEST(OpenAIProtocol, StreamOptionsNeedStream) {
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "stream_options": {"include_usage": true}})").param(), "stream_options");
  EXPECT_FALSE(chat("{" + kMsgs + R"(, "stream": true})").include_usage);
}

TEST(OpenAIProtocol, ChatTemplateKwargsMayNotRedefineTemplateInputs) {
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "chat_template_kwargs": {"add_generation_prompt": false}})").param(),
            "chat_template_kwargs");
}

TEST(OpenAIProtocol, CompletionPromptsTakeEveryOpenAIShape) {
  auto r = completion(R"({"prompt": "hello"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hello");
  EXPECT_FALSE(r.prompts[0].is_ids);

  r = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));

  r = completion(R"({"prompt": ["a", "b"]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].text, "b");

  r = completion(R"({"prompt": [[4], [5, 6]]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int32_t>{5, 6}));

  for (const std::string bad :
       {R"({})", R"({"prompt": ""})", R"({"prompt": []})", R"({"prompt": 5})", R"({"prompt": [-1]})",
        R"({"prompt": [1, "a"]})", R"({"prompt": [{}]})", R"({"prompt": [[]]})", R"({"prompt": [4294967296]})"}) {
    const auto e = error_of(bad, Endpoint::Completion);
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_EQ(e.param().rfind("prompt", 0), 0u) << bad << " -> " << e.param();
  }
}

TEST(OpenAIProtocol, SequencesPerRequestAreBounded) {
  std::string prompts = "[";
  for (int i = 0; i < 20; ++i) prompts += std::string(i ? "," : "") + "\"p\"";
  prompts += "]";
  EXPECT_NO_THROW(completion(R"({"prompt": )" + prompts + R"(, "n": 3})"));
  EXPECT_EQ(error_of(R"({"prompt": )" + prompts + R"(, "n": 4})", Endpoint::Completion).status(), 400);
}

TEST(OpenAIProtocol, ErrorBodyHasTheOpenAIShape) {
  const ApiError e(401, "bad key", "authentication_error", "", "invalid_api_key");
  const auto j = e.body();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "bad key");
  EXPECT_EQ(j["error"]["type"], "authentication_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_api_key");
}

TEST(OpenAIProtocol, ResponsesHaveTheOpenAIShape) {
  const ResponseMeta chat_meta{Endpoint::Chat, "chatcmpl-1", 1700000000, "tiny"};
  auto j = completion_response(chat_meta, {{"Hello", FinishReason::Stop}, {"Hi", FinishReason::Length}}, {5, 3});
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["total_tokens"], 8);

  const ResponseMeta text_meta{Endpoint::Completion, "cmpl-1", 1700000000, "tiny"};
  j = completion_response(text_meta, {{"x", FinishReason::Stop}}, {1, 1});
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "x");
}

TEST(OpenAIProtocol, StreamChunks) {
  const ResponseMeta meta{Endpoint::Chat, "chatcmpl-1", 1, "tiny"};
  auto first = stream_chunk(meta, 0, "", true, std::nullopt, false);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));

  auto piece = stream_chunk(meta, 1, "abc", false, std::nullopt, true);
  EXPECT_EQ(piece["choices"][0]["index"], 1);
  EXPECT_EQ(piece["choices"][0]["delta"]["content"], "abc");
  EXPECT_FALSE(piece["choices"][0]["delta"].contains("role"));
  EXPECT_TRUE(piece["usage"].is_null());

  auto last = stream_chunk(meta, 0, "", false, FinishReason::Length, false);
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");

  auto usage = usage_chunk(meta, {4, 2});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);

  EXPECT_EQ(sse_event(nlohmann::json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // Model output that is not valid UTF-8 is replaced, never thrown.
  EXPECT_NO_THROW(sse_event(nlohmann::json{{"t", std::string("\xff")}}));

  const ResponseMeta text_meta{Endpoint::Completion, "cmpl-1", 1, "tiny"};
  auto t = stream_chunk(text_meta, 0, "zz", false, std::nullopt, false);
  EXPECT_EQ(t["object"], "text_completion");
  EXPECT_EQ(t["choices"][0]["text"], "zz");
}

TEST(OpenAIProtocol, ModelsList) {
  const auto j = models_response("tiny", 5, 512);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["max_model_len"], 512);
}

TEST(OpenAIProtocol, LogprobsChatAndCompletions) {
  EXPECT_EQ(chat("{" + kMsgs + "}").logprobs, -1);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "logprobs": true})").logprobs, 0);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "logprobs": true, "top_logprobs": 20})").logprobs, 20);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "logprobs": false, "top_logprobs": 0})").logprobs, -1);
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "top_logprobs": 3})").param(), "top_logprobs");  // needs logprobs
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "logprobs": true, "top_logprobs": 21})").param(), "top_logprobs");
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "logprobs": true, "top_logprobs": -1})").param(), "top_logprobs");
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "logprobs": "yes"})").param(), "logprobs");
  EXPECT_EQ(completion(R"({"prompt": "x", "logprobs": 5})").logprobs, 5);
  EXPECT_EQ(completion(R"({"prompt": "x", "logprobs": null})").logprobs, -1);
  EXPECT_EQ(error_of(R"({"prompt": "x", "logprobs": 21})", Endpoint::Completion).param(), "logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logprobs": true})", Endpoint::Completion).param(), "logprobs");
  EXPECT_TRUE(completion(R"({"prompt": "x", "echo": true})").echo);
}

TEST(OpenAIProtocol, ToolChoice) {
  EXPECT_EQ(chat("{" + kMsgs + "}").tool_choice, ToolChoiceMode::Auto);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tool_choice": "none", )" + kTools + "}").tool_choice, ToolChoiceMode::None);
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "tool_choice": "sometimes"})").param(), "tool_choice");
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "tool_choice": 3})").param(), "tool_choice");
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "tool_choice": "required"})").param(), "tool_choice");  // no tools
  const auto e =
      error_of("{" + kMsgs + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}, )" + kTools + "}");
  EXPECT_EQ(e.param(), "tool_choice");
  EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "tool_choice": {"type": "function"}, )" + kTools + "}").param(), "tool_choice");
}

TEST(OpenAIProtocol, ResponseFormatAndForcedToolsBecomeGrammars) {
  EXPECT_EQ(chat("{" + kMsgs + R"(, "response_format": {"type": "text"}})").grammar, nullptr);
  EXPECT_NE(chat("{" + kMsgs + R"(, "response_format": {"type": "json_object"}})").grammar, nullptr);
  EXPECT_NE(chat("{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "schema": {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}}}})")
                .grammar,
            nullptr);
  const auto bad_schema =
      error_of("{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "schema": {"type": "integer", "multipleOf": 3}}}})");
  EXPECT_EQ(bad_schema.param(), "response_format");
  EXPECT_NE(std::string(bad_schema.what()).find("multipleOf"), std::string::npos);
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "response_format": {"type": "yaml"}})").param(), "response_format");
  const auto named = chat(
      "{" + kMsgs + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, )" + kTools + "}");
  EXPECT_EQ(named.tool_choice, ToolChoiceMode::Named);
  EXPECT_NE(named.grammar, nullptr);
  EXPECT_NE(chat("{" + kMsgs + R"(, "tool_choice": "required", )" + kTools + "}").grammar, nullptr);
  EXPECT_EQ(error_of("{" + kMsgs + R"(, "tool_choice": "required", "response_format": {"type": "json_object"}, )" +
                     kTools + "}")
                .param(),
            "response_format");
}

TEST(OpenAIProtocol, AssistantToolCallTurnWithNullContent) {
  const auto r = chat(R"({"messages": [{"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}], )" +
                      kTools + "}");
  EXPECT_EQ(r.messages[1]["content"], "");
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "assistant", "content": null}]})").param(), "messages[0].content");
}

TEST(OpenAIProtocol, ResponsesCarryToolCallsReasoningAndLogprobs) {
  const ResponseMeta meta{Endpoint::Chat, "chatcmpl-1", 7, "m"};
  ChoiceResult c;
  c.finish_reason = FinishReason::Stop;
  c.tool_calls = {{"call_a", "get_weather", R"({"city": "Paris"})"}};
  c.has_reasoning = true;
  c.reasoning = "thinking";
  c.logprobs = {{"content", nlohmann::json::array()}};
  auto j = completion_response(meta, {c}, {1, 2});
  const auto& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["reasoning_content"], "thinking");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");
  EXPECT_FALSE(choice["message"]["tool_calls"][0].contains("index"));
  EXPECT_EQ(choice["logprobs"]["content"], nlohmann::json::array());

  ChunkDelta d;
  d.tool_calls = c.tool_calls;
  d.first_tool_index = 1;
  d.reasoning = "r";
  auto chunk = stream_chunk(meta, 0, d, false, std::nullopt, true, false);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
  EXPECT_EQ(chunk["choices"][0]["delta"]["reasoning_content"], "r");
  EXPECT_FALSE(chunk["choices"][0]["delta"].contains("content"));
  auto last = stream_chunk(meta, 0, ChunkDelta{}, false, FinishReason::Stop, true, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "tool_calls");
  last = stream_chunk(meta, 0, ChunkDelta{}, false, FinishReason::Length, true, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
}

// Request fields reach the chat template; its join/sum/unique/select filters and str.join iterated a
// list made on the spot from a string and freed before reading it (a heap use-after-free a client
// could trigger with any message, caught by the ASan build of this test).
TEST(OpenAIProtocol, RequestFieldsThroughTemplateFiltersAreSafe) {
  const auto r = chat(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})");
  const ChatTemplate t = ChatTemplate::from_string(
      "{% for m in messages %}{{ m.content|join('-') }} {{ '+'.join(m.content) }} {{ m.content|unique|join }} "
      "{{ m.content|reject('equalto', 'h')|join }} {{ m.role|select('equalto', 'u')|list|length }}{% endfor %}");
  EXPECT_EQ(t.render(r.messages, r.tools, true, r.chat_template_kwargs), "h-i h+i hi i 1");
}

// A template error from request data is an InvalidArgumentError (the server's 400), never another
// exception type (a 500): here a printf width past the limit, which went to std::stoi before.
TEST(OpenAIProtocol, TemplateFailuresFromRequestDataAreInvalidArgument) {
  const auto r = chat(R"({"messages": [{"role": "user", "content": "%99999999999d"}]})");
  const ChatTemplate t = ChatTemplate::from_string("{{ messages[0].content % 1 }}");
  EXPECT_THROW(t.render(r.messages, r.tools, true, r.chat_template_kwargs), InvalidArgumentError);
}

}  // namespace
}  // namespace opchain::server
