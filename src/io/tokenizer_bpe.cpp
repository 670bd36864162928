// BPE merging of one pre-tokenized word (see tokenizer_detail.h).
#include <algorithm>
#include <vector>

#include "io/tokenizer_detail.h"

namespace opchain::tokenizer_detail {

// Short words (nearly all of them): keep the merge of each adjacent pair in an array and
// rescan for the minimum. Quadratic, but n is small and everything stays in L1, which beats a
// heap up to about kSmallWord symbols.
size_t merge_small(const MergeTable& merges, int32_t* sym, size_t m) noexcept {
  if (m < 2) return m;
  uint64_t pair[kSmallWord];  // pair[k] = merge of sym[k], sym[k + 1]
  for (size_t k = 0; k + 1 < m; ++k) pair[k] = merges.find(sym[k], sym[k + 1]);
  while (m > 1) {
    size_t best = 0;
    for (size_t k = 1; k + 1 < m; ++k) {
      if (pair[k] < pair[best]) best = k;  // strict: the leftmost of equal ranks wins
    }
    if (pair[best] == MergeTable::kNone) break;
    sym[best] = static_cast<int32_t>(pair[best] & 0xFFFFFFFFu);
    // Drop sym[best + 1] and pair[best]; pair[best + 1] described a pair that no longer exists.
    for (size_t k = best + 1; k + 1 < m; ++k) sym[k] = sym[k + 1];
    for (size_t k = best + 1; k + 2 < m; ++k) pair[k] = pair[k + 1];
    --m;
    if (best > 0) pair[best - 1] = merges.find(sym[best - 1], sym[best]);
    if (best + 1 < m) pair[best] = merges.find(sym[best], sym[best + 1]);
  }
  return m;
}

// Long words (e.g. a run of 10,000 'a'): doubly linked symbols and a min-heap of candidate
// merges keyed by (rank, position), with stale entries skipped when popped. O(n log n). A
// symbol's generation changes whenever the pair starting at it changes, which identifies stale
// entries without another merge-table lookup; the 4-ary heap of 16-byte entries keeps each sift
// level within one cache line.
void merge_large(const MergeTable& merges, std::vector<int32_t>& ids) {
  struct Symbol {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev;
    int32_t next;
    uint32_t gen;
  };
  struct Candidate {
    uint64_t key;  // rank << 32 | position
    int32_t merged;
    uint32_t gen;
  };
  if (ids.size() < 2) return;
  std::vector<Symbol> sym(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    sym[i] = Symbol{ids[i], static_cast<int32_t>(i) - 1, static_cast<int32_t>(i) + 1, 0};
  }
  sym.back().next = -1;

  std::vector<Candidate> heap;
  heap.reserve(sym.size() + 16);
  auto make = [&](int32_t left, Candidate& c) {
    const int32_t right = sym[left].next;
    if (right < 0) return false;
    const uint64_t m = merges.find(sym[left].id, sym[right].id);
    if (m == MergeTable::kNone) return false;
    c = Candidate{(m & ~uint64_t{0xFFFFFFFFu}) | static_cast<uint32_t>(left), static_cast<int32_t>(m & 0xFFFFFFFFu),
                  sym[left].gen};
    return true;
  };
  auto sift_down = [&](size_t i) {
    const Candidate moving = heap[i];
    const size_t size = heap.size();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= size) break;
      size_t best = first;
      const size_t last = std::min(first + 4, size);
      for (size_t k = first + 1; k < last; ++k) {
        if (heap[k].key < heap[best].key) best = k;
      }
      if (heap[best].key >= moving.key) break;
      heap[i] = heap[best];
      i = best;
    }
    heap[i] = moving;
  };
  auto push = [&](int32_t left) {
    Candidate c;
    if (!make(left, c)) return;
    size_t i = heap.size();
    heap.push_back(c);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (heap[parent].key <= c.key) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = c;
  };

  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) {
    Candidate c;
    if (make(i, c)) heap.push_back(c);
  }
  for (size_t i = heap.size() / 4 + 1; i-- > 0;) {
    if (i < heap.size()) sift_down(i);
  }

  while (!heap.empty()) {
    const Candidate c = heap.front();
    heap.front() = heap.back();
    heap.pop_back();
    if (!heap.empty()) sift_down(0);
    const auto pos = static_cast<int32_t>(c.key & 0xFFFFFFFFu);
    Symbol& left = sym[pos];
    if (left.id < 0 || left.gen != c.gen || left.next < 0) continue;
    Symbol& right = sym[left.next];
    left.id = c.merged;
    ++left.gen;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = pos;
    if (left.prev >= 0) {
      ++sym[left.prev].gen;  // the pair starting there now ends in the merged symbol
      push(left.prev);
    }
    push(pos);
  }
  ids.clear();
  for (const Symbol& x : sym) {
    if (x.id >= 0) ids.push_back(x.id);
  }
}

}  // namespace opchain::tokenizer_detail
