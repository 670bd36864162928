#include "engine/compiled_grammar.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "engine/token_vocabulary.h"

namespace opchain {

namespace {

constexpr int32_t kUnknown = -2;          // transition not computed yet
constexpr int32_t kAccept = 0;            // stack node 0: every frame popped, the sentence is complete
constexpr size_t kMaxStates = 1u << 20;   // a grammar that explodes is stopped, not allowed to eat memory
constexpr size_t kMaxCachedMasks = 4096;  // ~19 KiB each at 151,936 tokens; the cache is reset past this
constexpr int kMaxClosureDepth = 4096;

struct Frame {
  int32_t rule, alt, pos, parent;
  bool operator==(const Frame&) const = default;
};

struct FrameHash {
  size_t operator()(const Frame& f) const {
    uint64_t h = static_cast<uint32_t>(f.rule);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(f.alt);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(f.pos);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(f.parent);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct VectorHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = v.size();
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 31));
  }
};

}  // namespace

struct CompiledGrammar::Impl {
  const Grammar& g;
  std::mutex mu;
  std::vector<Frame> nodes;  // interned stack nodes; node 0 is kAccept
  std::unordered_map<Frame, int32_t, FrameHash> node_ids;
  std::vector<std::vector<int32_t>> states;  // each: sorted node ids whose top symbol is a terminal (or kAccept)
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> state_ids;
  std::vector<int32_t> transitions;  // states x 256
  std::vector<uint32_t> visited;     // per node: the closure epoch that last reached it
  uint32_t epoch = 0;
  std::vector<int32_t> scratch;
  std::map<std::pair<uint64_t, int32_t>, std::shared_ptr<const TokenBitmask>> masks;
  size_t masks_computed = 0;

  explicit Impl(const Grammar& grammar) : g(grammar) {
    nodes.push_back(Frame{-1, -1, -1, -1});
    visited.push_back(0);
  }

  int32_t node(const Frame& f) {
    auto [it, inserted] = node_ids.try_emplace(f, static_cast<int32_t>(nodes.size()));
    if (inserted) {
      nodes.push_back(f);
      visited.push_back(0);
    }
    return it->second;
  }

  // Adds to `out` every stack reachable from `id` without consuming a byte whose top is a terminal
  // (or kAccept), expanding rules and popping finished alternatives.
  void closure(int32_t id, std::vector<int32_t>& out, int depth) {
    if (visited[static_cast<size_t>(id)] == epoch) return;
    visited[static_cast<size_t>(id)] = epoch;
    if (id == kAccept) {
      out.push_back(kAccept);
      return;
    }
    if (depth > kMaxClosureDepth)
      throw InvalidArgumentError("grammar: rule '" +
                                 g.rules()[static_cast<size_t>(nodes[static_cast<size_t>(id)].rule)].name +
                                 "' is left-recursive (reaches itself without consuming input)");
    const Frame f = nodes[static_cast<size_t>(id)];
    const Grammar::Sequence& seq = g.rules()[static_cast<size_t>(f.rule)].alternatives[static_cast<size_t>(f.alt)];
    if (f.pos == static_cast<int32_t>(seq.size())) {
      closure(f.parent, out, depth + 1);
      return;
    }
    const Grammar::Symbol sym = seq[static_cast<size_t>(f.pos)];
    if (!Grammar::is_rule(sym)) {
      out.push_back(id);
      return;
    }
    // Tail call: a rule that ends the alternative returns straight to our caller.
    const int32_t ret =
        f.pos + 1 == static_cast<int32_t>(seq.size()) ? f.parent : node(Frame{f.rule, f.alt, f.pos + 1, f.parent});
    const size_t alts = g.rules()[static_cast<size_t>(sym)].alternatives.size();
    for (size_t a = 0; a < alts; ++a) closure(node(Frame{sym, static_cast<int32_t>(a), 0, ret}), out, depth + 1);
  }

  int32_t intern_state(std::vector<int32_t>& set) {
    if (set.empty()) return kDead;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    auto it = state_ids.find(set);
    if (it != state_ids.end()) return it->second;
    if (states.size() >= kMaxStates)
      throw InvalidArgumentError("grammar: more than " + std::to_string(kMaxStates) +
                                 " automaton states; the grammar is too ambiguous to match");
    const auto id = static_cast<int32_t>(states.size());
    states.push_back(set);
    state_ids.emplace(set, id);
    transitions.resize(transitions.size() + 256, kUnknown);
    return id;
  }

  int32_t start() {
    scratch.clear();
    ++epoch;
    const size_t alts = g.rules()[static_cast<size_t>(g.root())].alternatives.size();
    for (size_t a = 0; a < alts; ++a) closure(node(Frame{g.root(), static_cast<int32_t>(a), 0, kAccept}), scratch, 0);
    return intern_state(scratch);
  }

  int32_t compute_transition(int32_t state, uint8_t byte) {
    std::vector<int32_t> next;
    ++epoch;
    const std::vector<int32_t> current = states[static_cast<size_t>(state)];  // closure may grow `states`' storage
    for (int32_t id : current) {
      if (id == kAccept) continue;
      const Frame f = nodes[static_cast<size_t>(id)];
      const Grammar::Symbol sym =
          g.rules()[static_cast<size_t>(f.rule)].alternatives[static_cast<size_t>(f.alt)][static_cast<size_t>(f.pos)];
      if (g.terminal_bytes(sym).test(byte)) closure(node(Frame{f.rule, f.alt, f.pos + 1, f.parent}), next, 0);
    }
    const int32_t to = intern_state(next);
    transitions[static_cast<size_t>(state) * 256 + byte] = to;
    return to;
  }

  int32_t step(int32_t state, uint8_t byte) {
    const int32_t t = transitions[static_cast<size_t>(state) * 256 + byte];
    return t != kUnknown ? t : compute_transition(state, byte);
  }

  // Walks the trie in preorder with the automaton state of each node's prefix on a stack by depth;
  // a dead prefix skips its subtree.
  std::shared_ptr<const TokenBitmask> compute_mask(int32_t state, const TokenVocabulary& v) {
    auto mask = std::make_shared<TokenBitmask>((v.size() + 63) / 64, 0);
    std::vector<int32_t> at_depth(v.max_depth() + 1);
    at_depth[0] = state;
    const size_t n = v.num_nodes();
    for (size_t i = 1; i < n;) {
      const uint32_t d = v.depth(i);
      const int32_t s = step(at_depth[d - 1], v.byte(i));
      if (s == kDead) {
        i = v.subtree_end(i);
        continue;
      }
      at_depth[d] = s;
      for (const int32_t* t = v.tokens_begin(i); t != v.tokens_end(i); ++t)
        (*mask)[static_cast<size_t>(*t) >> 6] |= uint64_t{1} << (*t & 63);
      ++i;
    }
    ++masks_computed;
    return mask;
  }
};

CompiledGrammar::CompiledGrammar(Grammar grammar) : grammar_(std::move(grammar)) {
  grammar_.validate();
  impl_ = std::make_unique<Impl>(grammar_);
  start_ = impl_->start();
  if (start_ == kDead) throw InvalidArgumentError("grammar: the root rule matches nothing");
}

CompiledGrammar::~CompiledGrammar() = default;

int32_t CompiledGrammar::advance(int32_t state, std::string_view bytes) const {
  std::lock_guard lock(impl_->mu);
  for (char c : bytes) {
    if (state == kDead) return kDead;
    state = impl_->step(state, static_cast<uint8_t>(c));
  }
  return state;
}

bool CompiledGrammar::accepting(int32_t state) const {
  if (state == kDead) return false;
  std::lock_guard lock(impl_->mu);
  const auto& s = impl_->states[static_cast<size_t>(state)];
  return !s.empty() && s.front() == kAccept;
}

std::shared_ptr<const TokenBitmask> CompiledGrammar::token_mask(int32_t state, const TokenVocabulary& vocab) const {
  std::lock_guard lock(impl_->mu);
  if (state == kDead) return std::make_shared<const TokenBitmask>((vocab.size() + 63) / 64, 0);
  const auto key = std::make_pair(vocab.serial(), state);
  if (auto it = impl_->masks.find(key); it != impl_->masks.end()) return it->second;
  if (impl_->masks.size() >= kMaxCachedMasks) impl_->masks.clear();
  auto mask = impl_->compute_mask(state, vocab);
  impl_->masks.emplace(key, mask);
  return mask;
}

CompiledGrammar::Stats CompiledGrammar::stats() const {
  std::lock_guard lock(impl_->mu);
  return Stats{impl_->states.size(), impl_->nodes.size(), impl_->masks.size(), impl_->masks_computed};
}

}  // namespace opchain
