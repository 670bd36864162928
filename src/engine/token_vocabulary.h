#pragma once
// The bytes of every token of a vocabulary, laid out as a trie in preorder, so that a grammar mask
// walks each shared prefix once and skips a whole subtree the moment its prefix is rejected. Built
// once per tokenizer (about 0.1 s for 151,936 tokens) and shared, immutable, by every request.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace opchain {

class Tokenizer;

class TokenVocabulary {
 public:
  // token_bytes[id]: what token `id` adds to the text; empty for ids that can never be part of
  // constrained text (special tokens, ids with no token). size() == token_bytes.size().
  explicit TokenVocabulary(const std::vector<std::string>& token_bytes);
  // Every id below `vocab_size` (the model's logits width, which may exceed the tokenizer's):
  // Tokenizer::token_bytes, except special tokens, which get no bytes.
  static std::shared_ptr<const TokenVocabulary> from_tokenizer(const Tokenizer& tok, size_t vocab_size);

  size_t size() const { return size_; }
  // Distinct per instance, so masks cached for one vocabulary are never served to another.
  uint64_t serial() const { return serial_; }
  const std::string& bytes(int32_t id) const { return token_bytes_[static_cast<size_t>(id)]; }

  // Trie in preorder; node 0 is the root (the empty prefix). Node i > 0 spells its parent's prefix
  // plus byte(i), sits at depth(i) >= 1, and its subtree is the nodes [i, subtree_end(i)).
  size_t num_nodes() const { return byte_.size(); }
  uint8_t byte(size_t i) const { return byte_[i]; }
  uint32_t depth(size_t i) const { return depth_[i]; }
  uint32_t subtree_end(size_t i) const { return subtree_end_[i]; }
  // The ids whose bytes end exactly at node i.
  const int32_t* tokens_begin(size_t i) const { return token_ids_.data() + token_first_[i]; }
  const int32_t* tokens_end(size_t i) const { return token_ids_.data() + token_first_[i + 1]; }
  uint32_t max_depth() const { return max_depth_; }

 private:
  size_t size_ = 0;
  uint64_t serial_ = 0;
  uint32_t max_depth_ = 0;
  std::vector<std::string> token_bytes_;
  std::vector<uint8_t> byte_;
  std::vector<uint32_t> depth_, subtree_end_, token_first_;
  std::vector<int32_t> token_ids_;
};

}  // namespace opchain
