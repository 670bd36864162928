#pragma once
// One request's position in a CompiledGrammar: which tokens may come next, and the state after each
// sampled token. Stop tokens (eos) are allowed exactly when the text so far is complete, and are
// the only tokens allowed when nothing else can follow, so a finished JSON value ends the request.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/compiled_grammar.h"

namespace opchain {

class TokenVocabulary;

class GrammarMatcher {
 public:
  // stop_token_ids: the ids that end the request (typically eos); they carry no bytes.
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocabulary> vocab,
                 std::vector<int32_t> stop_token_ids);

  // Writes the allowed next tokens into `mask` (resized to the vocabulary's words; bit set =
  // allowed). Returns false when no token is allowed at all: the text is complete and there is no
  // stop token to end it (the caller should finish the request).
  bool fill_next_token_mask(std::vector<uint64_t>& mask) const;
  // Advances past `token`; false (state unchanged) if the grammar does not allow it here.
  bool accept_token(int32_t token);
  // The text so far is a complete sentence of the grammar.
  bool is_complete() const;
  bool stopped() const { return stopped_; }  // a stop token was accepted

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<int32_t> stop_ids_;
  int32_t state_;
  bool stopped_ = false;
};

}  // namespace opchain
