#pragma once
// A grammar turned into a byte automaton that is built lazily, as generation explores it, and the
// token masks of its states, computed by walking a TokenVocabulary's trie and cached per state.
//
// Note [Grammar automaton]
// A matcher state is the set of parse stacks still alive after the bytes so far (a nondeterministic
// pushdown automaton, as in llama.cpp's GBNF matcher and xgrammar). Every stack frame is a position
// (rule, alternative, symbol index) and stacks are interned as linked nodes, so a set of stacks is a
// sorted vector of node ids and equal configurations are equal vectors. Each distinct configuration
// gets a small integer id (a DFA state) and its transition on each byte is computed once and stored
// in a 256-entry row: after warm-up a byte costs one table load, which is what makes walking the
// ~1M-node trie of a 151,936-token vocabulary affordable. A call whose last symbol is a rule does
// not keep a return frame (tail calls), so loops such as array items and string characters return
// to the same configuration instead of growing the stack, and their masks are cached.
// Requirements on the grammar: no left recursion (a rule that can reach itself without consuming a
// byte), which the JSON-schema compiler never produces; it is detected and reported.
// Thread safety: one mutex guards the tables; every public method takes it, so requests on
// several threads may share one CompiledGrammar (the engine's step thread is the usual user).
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/grammar.h"

namespace opchain {

class TokenVocabulary;

// A set of token ids as bits: bit (id % 64) of word id / 64.
using TokenBitmask = std::vector<uint64_t>;

class CompiledGrammar {
 public:
  static constexpr int32_t kDead = -1;  // the state after a byte no stack accepts

  // Validates the grammar (InvalidArgumentError) and builds the start state; left recursion is
  // reported here when the root reaches it without input, else when first reached.
  explicit CompiledGrammar(Grammar grammar);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;  // the tables point into grammar_
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const { return grammar_; }
  int32_t start_state() const { return start_; }
  // The state after `bytes` from `state`, or kDead.
  int32_t advance(int32_t state, std::string_view bytes) const;
  // True when the bytes so far form a complete sentence of the grammar (more may still follow).
  bool accepting(int32_t state) const;

  // The tokens of `vocab` whose bytes keep `state` alive (stop tokens are the caller's business:
  // they have no bytes). Cached per (vocabulary, state); the result stays valid after later calls.
  std::shared_ptr<const TokenBitmask> token_mask(int32_t state, const TokenVocabulary& vocab) const;

  // Sizes of the lazily built tables, for benchmarks and tests.
  struct Stats {
    size_t states = 0, stack_nodes = 0, cached_masks = 0, masks_computed = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  Grammar grammar_;
  std::unique_ptr<Impl> impl_;
  int32_t start_ = kDead;
};

}  // namespace opchain
