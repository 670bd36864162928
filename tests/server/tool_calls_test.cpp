// Tool-call markup read back into calls, whole and streamed in every split.
#include <gtest/gtest.h>

#include <random>

#include "server/tool_calls.h"

namespace opchain::server {
namespace {

using ojson = nlohmann::ordered_json;

// The reply fed in pieces of random size: the same calls and content as parsing it whole.
ToolCallParse parse_streamed(std::string_view text, ToolCallFormat f, const ojson& tools, uint32_t seed) {
  std::mt19937 g(seed);
  ToolCallStream s(f, tools);
  ToolCallParse out;
  auto take = [&](ToolCallStream::Delta d) {
    out.content += d.content;
    for (ToolCall& c : d.calls) out.calls.push_back(std::move(c));
  };
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(text.size() - at, 1 + g() % 7);
    take(s.feed(text.substr(at, n)));
    at += n;
  }
  take(s.finish());
  return out;
}

void expect_same(const ToolCallParse& a, const ToolCallParse& b) {
  EXPECT_EQ(a.content, b.content);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
  }
}

void check_streams_match(std::string_view text, ToolCallFormat f, const ojson& tools = nullptr) {
  const ToolCallParse whole = parse_tool_calls(text, f, tools);
  for (uint32_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ToolCallParse streamed = parse_streamed(text, f, tools, seed);
    if (!streamed.calls.empty() && streamed.content.find_first_not_of(" \t\r\n") == std::string::npos)
      streamed.content.clear();
    expect_same(whole, streamed);
  }
}

TEST(ToolCalls, FormatFromTemplate) {
  EXPECT_EQ(tool_call_format_of("{{ '<tool_call>\\n{\"name\": ' }}"), ToolCallFormat::Hermes);
  EXPECT_EQ(tool_call_format_of("<tool_call>\\n<function=' + tool_call.name"), ToolCallFormat::QwenXml);
  EXPECT_EQ(tool_call_format_of("<|start_header_id|>ipython ... '\"parameters\": '"), ToolCallFormat::Llama3Json);
  EXPECT_EQ(tool_call_format_of("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::None);
}

TEST(ToolCalls, HermesCallsAndContent) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": "
      "2}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::Hermes, nullptr);
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(p.calls[0].arguments), ojson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(p.calls[0].id.size(), 29u);
  check_streams_match(text, ToolCallFormat::Hermes);
}

TEST(ToolCalls, OnlyCallsLeaveNoContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n";
  const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::Hermes, nullptr);
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  check_streams_match(text, ToolCallFormat::Hermes);
}

TEST(ToolCalls, MarkupThatIsNotACallStaysContent) {
  for (const std::string& text : {std::string("<tool_call>\nnot json\n</tool_call> after"),
                                  std::string("<tool_call>{\"arguments\": {}}</tool_call>"),
                                  std::string("a < b and <tool_ca"), std::string("plain text, no calls"),
                                  std::string("<tool_call>{\"name\": \"f\", \"arguments\": 3}</tool_call>")}) {
    SCOPED_TRACE(text);
    const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::Hermes, nullptr);
    EXPECT_TRUE(p.calls.empty());
    EXPECT_EQ(p.content, text);
    check_streams_match(text, ToolCallFormat::Hermes);
  }
}

TEST(ToolCalls, UnclosedCallAtTheEndStillParses) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}";
  const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::Hermes, nullptr);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  check_streams_match(text, ToolCallFormat::Hermes);
}

TEST(ToolCalls, ArgumentsWrittenAsAString) {
  const ToolCallParse p = parse_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>)",
                                           ToolCallFormat::Hermes, nullptr);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"a": 1})");
}

TEST(ToolCalls, QwenXmlParametersTakeTheirDeclaredTypes) {
  const ojson tools =
      ojson::parse(R"([{"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "filters": {"type": "object"}}}}}])");
  const std::string text =
      "I will "
      "search.\n<tool_call>\n<function=search>\n<parameter=query>\n42\n</parameter>\n<parameter=limit>\n5\n</"
      "parameter>\n"
      "<parameter=filters>\n{\"lang\": \"en\"}\n</parameter>\n</function>\n</tool_call>";
  const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::QwenXml, tools);
  EXPECT_EQ(p.content, "I will search.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "search");
  EXPECT_EQ(ojson::parse(p.calls[0].arguments),
            ojson::parse(R"({"query": "42", "limit": 5, "filters": {"lang": "en"}})"));
  check_streams_match(text, ToolCallFormat::QwenXml, tools);
}

TEST(ToolCalls, QwenXmlModelWritingHermesJson) {
  const ToolCallParse p = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
                                           ToolCallFormat::QwenXml, nullptr);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
}

TEST(ToolCalls, Llama3JsonWholeReply) {
  const std::string one = R"({"name": "get_weather", "parameters": {"city": "Oslo"}})";
  ToolCallParse p = parse_tool_calls(one, ToolCallFormat::Llama3Json, nullptr);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(p.calls[0].arguments), ojson::parse(R"({"city": "Oslo"})"));
  check_streams_match(one, ToolCallFormat::Llama3Json);

  const std::string two = R"(<|python_tag|>{"name": "a", "parameters": {"s": "x;y"}}; {"name": "b", "parameters": {}})";
  p = parse_tool_calls(two, ToolCallFormat::Llama3Json, nullptr);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "a");
  EXPECT_EQ(ojson::parse(p.calls[0].arguments)["s"], "x;y");
  EXPECT_EQ(p.calls[1].name, "b");

  for (const std::string& text :
       {std::string("Sure, {\"name\": \"x\"} is JSON"), std::string("{\"not\": \"a call\"}"), std::string("hello")}) {
    p = parse_tool_calls(text, ToolCallFormat::Llama3Json, nullptr);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
    check_streams_match(text, ToolCallFormat::Llama3Json);
  }
}

TEST(ToolCalls, NoFormatPassesTextThrough) {
  const std::string text = "<tool_call>{\"name\": \"f\"}</tool_call>";
  const ToolCallParse p = parse_tool_calls(text, ToolCallFormat::None, nullptr);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, text);
}

TEST(ToolCalls, StreamPassesContentOnBeforeTheReplyEnds) {
  ToolCallStream s(ToolCallFormat::Hermes, nullptr);
  EXPECT_EQ(s.feed("Hello wor").content, "Hello wor");
  EXPECT_EQ(s.feed("ld <tool").content, "ld");  // " <tool" may open a call (and the space before it is layout)
  const ToolCallStream::Delta d = s.feed("_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_TRUE(s.called());
}

}  // namespace
}  // namespace opchain::server
