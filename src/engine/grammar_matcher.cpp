#include "engine/grammar_matcher.h"

#include <algorithm>

#include "engine/token_vocabulary.h"

namespace opchain {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::shared_ptr<const TokenVocabulary> vocab, std::vector<int32_t> stop_token_ids)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      stop_ids_(std::move(stop_token_ids)),
      state_(grammar_->start_state()) {}

bool GrammarMatcher::fill_next_token_mask(std::vector<uint64_t>& mask) const {
  const size_t words = (vocab_->size() + 63) / 64;
  if (stopped_) {
    mask.assign(words, 0);
    return false;
  }
  const auto allowed = grammar_->token_mask(state_, *vocab_);
  mask.assign(allowed->begin(), allowed->end());
  bool any = std::any_of(mask.begin(), mask.end(), [](uint64_t w) { return w != 0; });
  if (grammar_->accepting(state_)) {
    for (int32_t id : stop_ids_) {
      if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) continue;
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      any = true;
    }
  }
  return any;
}

bool GrammarMatcher::accept_token(int32_t token) {
  if (stopped_) return false;
  if (std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end()) {
    if (!grammar_->accepting(state_)) return false;
    stopped_ = true;
    return true;
  }
  if (token < 0 || static_cast<size_t>(token) >= vocab_->size()) return false;
  const std::string& bytes = vocab_->bytes(token);
  if (bytes.empty()) return false;
  const int32_t next = grammar_->advance(state_, bytes);
  if (next == CompiledGrammar::kDead) return false;
  state_ = next;
  return true;
}

bool GrammarMatcher::is_complete() const { return grammar_->accepting(state_); }

}  // namespace opchain
