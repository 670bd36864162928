// A choice assembled from stream events: the reasoning split, tool calls and logprobs objects of a
// streamed choice join up to the whole one, for the Qwen3 template and tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "io/chat_template.h"
#include "io/tokenizer.h"
#include "server/choice_assembler.h"
#include "test_paths.h"

namespace opchain::server {
namespace {

using ojson = nlohmann::ordered_json;

const Tokenizer& qwen3() {
  static const Tokenizer t =
      Tokenizer::from_file(std::string(OPCHAIN_TEST_DATA_DIR) + "/tokenizer/qwen3/tokenizer.json");
  return t;
}

const ChatTemplate& qwen3_template() {
  static const ChatTemplate t = ChatTemplate::from_model_dir(std::string(OPCHAIN_TEST_DATA_DIR) + "/tokenizer/qwen3");
  return t;
}

ParsedRequest chat_with_tools(bool logprobs) {
  ParsedRequest r;
  r.endpoint = Endpoint::Chat;
  r.tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])");
  r.logprobs = logprobs ? 2 : -1;
  return r;
}

// The reply as the engine would stream it: one event per token, each with its logprobs.
struct Reply {
  std::vector<std::string> pieces;
  std::vector<StepLogprobs> steps;
};

Reply tokens_of(const std::string& text) {
  Reply r;
  const auto ids = qwen3().encode(text, true);
  for (int32_t id : ids) {
    r.pieces.push_back(qwen3().decode(std::vector<int32_t>{id}));
    r.steps.push_back(StepLogprobs{{id, -0.5f}, {{id, -0.5f}, {id == 0 ? 1 : 0, -2.0f}}});
  }
  return r;
}

TEST(ChoiceAssembler, ThinkingThenAToolCallStreamedAndWhole) {
  const ParsedRequest req = chat_with_tools(true);
  const std::string prompt = qwen3_template().render(
      ojson::parse(R"([{"role": "user", "content": "Weather in Paris?"}])"), req.tools, true, ojson::object());
  const ChoiceOptions opt = choice_options(req, qwen3_template().source(), prompt, qwen3());
  EXPECT_EQ(opt.tool_format, ToolCallFormat::Hermes);
  EXPECT_TRUE(opt.reasoning);
  EXPECT_FALSE(opt.think_opened_by_prompt);

  const Reply reply = tokens_of(
      "<think>\nThe user wants weather.\n</think>\n\nLet me look.\n<tool_call>\n"
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  ChoiceAssembler a(opt);
  std::string content, reasoning;
  std::vector<ToolCall> calls;
  size_t logprob_entries = 0;
  for (size_t i = 0; i < reply.pieces.size(); ++i) {
    const ChunkDelta d = a.add(reply.pieces[i], std::span(&reply.steps[i], 1));
    content += d.content;
    reasoning += d.reasoning;
    EXPECT_EQ(d.first_tool_index, static_cast<int>(calls.size()));
    calls.insert(calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    ASSERT_TRUE(d.logprobs.is_object());
    logprob_entries += d.logprobs["content"].size();
  }
  const ChunkDelta end = a.finish();
  content += end.content;
  EXPECT_TRUE(a.called_tools());
  const ChoiceResult whole = a.result(FinishReason::Stop);
  EXPECT_EQ(whole.reasoning, "\nThe user wants weather.\n");
  EXPECT_EQ(reasoning, whole.reasoning);
  EXPECT_EQ(whole.text, "Let me look.");
  EXPECT_EQ(content, whole.text);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(whole.tool_calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(whole.tool_calls[0].arguments), ojson::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(calls[0].id, whole.tool_calls[0].id);
  EXPECT_EQ(logprob_entries, reply.steps.size());
  ASSERT_EQ(whole.logprobs["content"].size(), reply.steps.size());
  const auto& first = whole.logprobs["content"][0];
  EXPECT_EQ(first["token"], qwen3().token_bytes(reply.steps[0].chosen.id));
  EXPECT_EQ(first["top_logprobs"].size(), 2u);

  const auto j = completion_response({Endpoint::Chat, "c", 0, "m"}, {whole}, {1, 1});
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChoiceAssembler, ToolChoiceNoneLeavesMarkupAsContent) {
  ParsedRequest req = chat_with_tools(false);
  req.tool_choice = ToolChoiceMode::None;
  const ChoiceOptions opt = choice_options(req, qwen3_template().source(), "", qwen3());
  EXPECT_EQ(opt.tool_format, ToolCallFormat::None);
  ChoiceAssembler a(opt);
  const std::string text = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>";
  std::string content = a.add(text, {}).content;
  content += a.finish().content;
  EXPECT_EQ(content, text);
  EXPECT_TRUE(a.result(FinishReason::Stop).logprobs.is_null());
}

TEST(ChoiceAssembler, CompletionsEchoAndTextOffsets) {
  ParsedRequest req;
  req.endpoint = Endpoint::Completion;
  req.echo = true;
  req.logprobs = 1;
  const ChoiceOptions opt = choice_options(req, "", "The cat", qwen3());
  ChoiceAssembler a(opt);
  const Reply reply = tokens_of(" sat on");
  std::string text;
  for (size_t i = 0; i < reply.pieces.size(); ++i)
    text += a.add(reply.pieces[i], std::span(&reply.steps[i], 1)).content;
  text += a.finish().content;
  EXPECT_EQ(text, "The cat sat on");
  const ChoiceResult r = a.result(FinishReason::Length);
  EXPECT_EQ(r.text, "The cat sat on");
  ASSERT_EQ(r.logprobs["tokens"].size(), reply.steps.size());
  EXPECT_EQ(r.logprobs["text_offset"][0], 7);  // after the echoed prompt
  EXPECT_EQ(r.logprobs["tokens"][0], " sat");
}

}  // namespace
}  // namespace opchain::server
