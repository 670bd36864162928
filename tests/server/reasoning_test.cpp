// Think blocks split into reasoning and content, whole and streamed in every split.
#include <gtest/gtest.h>

#include <random>

#include "server/reasoning.h"

namespace opchain::server {
namespace {

ReasoningSplit streamed(std::string_view text, bool opened, uint32_t seed) {
  std::mt19937 g(seed);
  ReasoningStream s(opened);
  ReasoningSplit out;
  auto take = [&](const ReasoningStream::Delta& d) {
    out.reasoning += d.reasoning;
    out.content += d.content;
  };
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(text.size() - at, 1 + g() % 5);
    take(s.feed(text.substr(at, n)));
    at += n;
  }
  take(s.finish());
  return out;
}

void check(std::string_view text, bool opened, std::string_view reasoning, std::string_view content) {
  SCOPED_TRACE(std::string(text));
  const ReasoningSplit whole = split_reasoning(text, opened);
  EXPECT_EQ(whole.reasoning, reasoning);
  EXPECT_EQ(whole.content, content);
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const ReasoningSplit s = streamed(text, opened, seed);
    EXPECT_EQ(s.reasoning, reasoning) << "seed " << seed;
    EXPECT_EQ(s.content, content) << "seed " << seed;
  }
}

TEST(Reasoning, Qwen3ThinkBlockThenAnswer) {
  check("<think>\nThe user greets.\n</think>\n\nHello!", false, "\nThe user greets.\n", "Hello!");
}

TEST(Reasoning, PromptOpenedTheBlock) {
  check("Let me think.\n</think>\n\nThe answer is 4.", true, "Let me think.\n", "The answer is 4.");
}

TEST(Reasoning, NoThinkingIsAllContent) {
  check("Just an answer with a <think> inside.", false, "", "Just an answer with a <think> inside.");
  check("", false, "", "");
  check("<thin", false, "", "<thin");
}

TEST(Reasoning, CutOffWhileThinkingIsAllReasoning) {
  check("<think>\nstill going </thi", false, "\nstill going </thi", "");
  check("thoughts", true, "thoughts", "");
}

TEST(Reasoning, EmptyThinkBlock) {
  const ReasoningSplit s = split_reasoning("<think>\n\n</think>\n\nHi", false);
  EXPECT_TRUE(s.has_reasoning);
  EXPECT_EQ(s.reasoning, "\n\n");
  EXPECT_EQ(s.content, "Hi");
  EXPECT_FALSE(split_reasoning("Hi", false).has_reasoning);
}

TEST(Reasoning, PromptAndTemplateDetection) {
  EXPECT_TRUE(prompt_opens_think("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_think("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_think("<|im_start|>assistant\n"));
  EXPECT_TRUE(template_has_reasoning("{{ '<think>\\n\\n</think>\\n\\n' }}"));
  EXPECT_FALSE(template_has_reasoning("{{ messages }}"));
}

}  // namespace
}  // namespace opchain::server
