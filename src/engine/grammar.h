#pragma once
// A context-free grammar over bytes: the form a JSON schema (or any other constraint) is compiled to
// before CompiledGrammar turns it into a byte automaton. Rules are alternatives of symbol sequences;
// a symbol is another rule or a terminal, a set of bytes. See Note [Grammar automaton] in
// compiled_grammar.h for what the matcher requires of a grammar (no left recursion).
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opchain {

using ByteSet = std::bitset<256>;

// One byte, an inclusive byte range, or any byte of `chars`.
ByteSet byte_set(uint8_t b);
ByteSet byte_range(uint8_t lo, uint8_t hi);
ByteSet byte_set_of(std::string_view chars);

class Grammar {
 public:
  // A symbol >= 0 names a rule; a symbol < 0 names terminal -(symbol + 1).
  using Symbol = int32_t;
  using Sequence = std::vector<Symbol>;

  struct Rule {
    std::string name;  // for errors and to_string() only
    std::vector<Sequence> alternatives;
  };

  // A new rule with no alternatives yet (add them with add_alternative).
  int32_t add_rule(std::string name);
  void add_alternative(int32_t rule, Sequence symbols);
  // A rule with the given alternatives, in one call.
  int32_t add_rule(std::string name, std::vector<Sequence> alternatives);
  // The symbol of a terminal; equal sets share one terminal.
  Symbol terminal(const ByteSet& bytes);
  // The symbols that spell `bytes` exactly.
  Sequence literal(std::string_view bytes);

  void set_root(int32_t rule) { root_ = rule; }
  int32_t root() const { return root_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const ByteSet& terminal_bytes(Symbol s) const { return terminals_[static_cast<size_t>(-(s + 1))]; }
  static bool is_rule(Symbol s) { return s >= 0; }

  // Throws InvalidArgumentError for a missing root, a reference to a rule that does not exist, a
  // rule with no alternatives, or an empty terminal.
  void validate() const;
  // EBNF-like listing, one rule a line, for tests and debugging.
  std::string to_string() const;

 private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> terminals_;
  int32_t root_ = -1;
};

// A rule matching `item` repeated min..max times (max < 0: unbounded) with `sep` between items.
// Optional items nest (each optional rule offers "stop here" or "one more"), and the unbounded loop
// is a tail call, so the automaton revisits one state per remaining count (Note [Grammar automaton]).
int32_t add_repeat_rule(Grammar& g, const std::string& name, const Grammar::Sequence& item,
                        const Grammar::Sequence& sep, int64_t min, int64_t max);
// The byte sequences of every well-formed multi-byte UTF-8 character (RFC 3629), one per
// alternative: what "any character other than ASCII" is in a grammar over bytes.
std::vector<Grammar::Sequence> utf8_multibyte_sequences(Grammar& g);

}  // namespace opchain
