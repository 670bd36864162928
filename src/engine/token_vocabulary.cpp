#include "engine/token_vocabulary.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "io/tokenizer.h"

namespace opchain {

namespace {
std::atomic<uint64_t> next_serial{1};
}

TokenVocabulary::TokenVocabulary(const std::vector<std::string>& token_bytes)
    : size_(token_bytes.size()), serial_(next_serial++), token_bytes_(token_bytes) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < token_bytes.size(); ++id)
    if (!token_bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
  // Sorted byte strings turn the trie into a walk: each string shares its longest common prefix
  // with the one before it, and the nodes below that prefix are new.
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string &x = token_bytes[static_cast<size_t>(a)], &y = token_bytes[static_cast<size_t>(b)];
    return x != y ? x < y : a < b;
  });
  byte_.push_back(0);
  depth_.push_back(0);
  subtree_end_.push_back(0);
  std::vector<uint32_t> node_tokens(1, 0);  // per node, how many ids end there
  std::vector<uint32_t> path{0};            // node at each depth of the current string
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& s = token_bytes[static_cast<size_t>(id)];
    size_t common = 0;
    if (prev)
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    while (path.size() > common + 1) {
      subtree_end_[path.back()] = static_cast<uint32_t>(byte_.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(s[d]));
      depth_.push_back(static_cast<uint32_t>(d + 1));
      subtree_end_.push_back(0);
      node_tokens.push_back(0);
    }
    ++node_tokens[path.back()];
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(s.size()));
    prev = &s;
  }
  while (!path.empty()) {
    subtree_end_[path.back()] = static_cast<uint32_t>(byte_.size());
    path.pop_back();
  }
  // Ids by node in preorder: the sorted order already lists them so (a node's ids precede its
  // children's, since a prefix sorts first).
  token_first_.assign(byte_.size() + 1, 0);
  for (size_t i = 0; i < byte_.size(); ++i) token_first_[i + 1] = token_first_[i] + node_tokens[i];
  token_ids_ = std::move(order);
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(const Tokenizer& tok, size_t vocab_size) {
  std::vector<std::string> bytes(vocab_size);
  const size_t n = std::min(vocab_size, tok.vocab_size());
  for (size_t id = 0; id < n; ++id) {
    const auto i = static_cast<int32_t>(id);
    if (!tok.is_special(i)) bytes[id] = tok.token_bytes(i);
  }
  return std::make_shared<const TokenVocabulary>(bytes);
}

}  // namespace opchain
