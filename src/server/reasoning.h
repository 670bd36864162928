#pragma once
// A thinking model's reply split into reasoning and answer: what it writes inside <think>...</think>
// goes to `reasoning_content`, the rest to `content` (vLLM's reasoning parsers for Qwen3 and
// DeepSeek-R1). A think block is open when the reply starts with <think>, or when the rendered prompt
// left one open (Qwen3.5's and the thinking-2507 templates end the generation prompt with "<think>\n").
// A block that never closes (the reply was cut off while thinking) is all reasoning, the same whether the
// reply streams or not. Newlines right after </think> are layout and are dropped.
#include <string>
#include <string_view>

namespace opchain::server {

// Whether a chat template produces think blocks (it mentions </think>).
bool template_has_reasoning(std::string_view chat_template);
// Whether a rendered prompt ends inside a think block the template opened.
bool prompt_opens_think(std::string_view prompt);

struct ReasoningSplit {
  std::string reasoning;  // empty: none
  std::string content;
  bool has_reasoning = false;  // a think block was open (even an empty one)
};

ReasoningSplit split_reasoning(std::string_view reply, bool opened_by_prompt);

// The same split as the reply streams: tag text is held back until it is known not to be a tag.
class ReasoningStream {
 public:
  explicit ReasoningStream(bool opened_by_prompt);
  struct Delta {
    std::string reasoning, content;
  };
  Delta feed(std::string_view text);
  Delta finish();

 private:
  Delta drain(bool final);

  enum class State { Start, Thinking, AfterThink, Content } state_;
  std::string pending_;
};

}  // namespace opchain::server
