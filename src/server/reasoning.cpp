#include "server/reasoning.h"

namespace opchain::server {

namespace {

constexpr std::string_view kStart = "<think>", kEnd = "</think>";

// The longest suffix of s that is a proper prefix of tag (it may still become the tag).
size_t partial_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

bool template_has_reasoning(std::string_view chat_template) {
  return chat_template.find(kEnd) != std::string_view::npos;
}

bool prompt_opens_think(std::string_view prompt) {
  const size_t open = prompt.rfind(kStart);
  return open != std::string_view::npos && prompt.find(kEnd, open) == std::string_view::npos;
}

ReasoningSplit split_reasoning(std::string_view reply, bool opened_by_prompt) {
  ReasoningStream stream(opened_by_prompt);
  ReasoningStream::Delta a = stream.feed(reply), b = stream.finish();
  ReasoningSplit out;
  out.reasoning = a.reasoning + b.reasoning;
  out.content = a.content + b.content;
  const size_t first = reply.find_first_not_of(" \t\r\n");
  out.has_reasoning =
      opened_by_prompt || (first != std::string_view::npos && reply.substr(first, kStart.size()) == kStart);
  return out;
}

ReasoningStream::ReasoningStream(bool opened_by_prompt) : state_(opened_by_prompt ? State::Thinking : State::Start) {}

ReasoningStream::Delta ReasoningStream::feed(std::string_view text) {
  pending_.append(text);
  return drain(false);
}

ReasoningStream::Delta ReasoningStream::finish() { return drain(true); }

ReasoningStream::Delta ReasoningStream::drain(bool final) {
  Delta d;
  for (;;) {
    switch (state_) {
      case State::Start: {  // does the reply open with <think> (after layout whitespace)?
        const size_t first = pending_.find_first_not_of(" \t\r\n");
        if (first == std::string::npos) {
          if (!final) return d;
          state_ = State::Content;
          break;
        }
        const std::string_view rest = std::string_view(pending_).substr(first);
        if (rest.substr(0, kStart.size()) == kStart) {
          pending_.erase(0, first + kStart.size());
          state_ = State::Thinking;
          break;
        }
        if (!final && kStart.substr(0, rest.size()) == rest) return d;  // maybe "<thi" of "<think>"
        state_ = State::Content;
        break;
      }
      case State::Thinking: {
        const size_t end = pending_.find(kEnd);
        if (end == std::string::npos) {
          const size_t keep = final ? 0 : partial_suffix(pending_, kEnd);
          d.reasoning += pending_.substr(0, pending_.size() - keep);
          pending_.erase(0, pending_.size() - keep);
          return d;
        }
        d.reasoning += pending_.substr(0, end);
        pending_.erase(0, end + kEnd.size());
        state_ = State::AfterThink;
        break;
      }
      case State::AfterThink: {  // the newlines the template puts after </think>
        const size_t first = pending_.find_first_not_of("\r\n");
        if (first == std::string::npos) {
          pending_.clear();
          if (!final) return d;
          state_ = State::Content;
          break;
        }
        pending_.erase(0, first);
        state_ = State::Content;
        break;
      }
      case State::Content:
        d.content += pending_;
        pending_.clear();
        return d;
    }
  }
}

}  // namespace opchain::server
