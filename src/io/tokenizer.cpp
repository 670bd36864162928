// Hugging Face tokenizer.json loader and byte-level BPE (see tokenizer.h).
//
// Encoding follows the `tokenizers` pipeline step by step, because ids must match the ones the
// model was trained on: added tokens are cut out of the raw text first, the remaining pieces are
// normalised, the normalised pieces are searched for "normalized" added tokens, then split by the
// pre-tokenizer, mapped to the byte-level alphabet and merged by rank.
#include "io/tokenizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "io/input_errors.h"
#include "io/json_input.h"
#include "io/model_directory.h"
#include "io/tokenizer_detail.h"

namespace opchain {

using json = nlohmann::json;
namespace td = tokenizer_detail;

namespace {

// Ids beyond this are certainly a corrupt file; refusing them keeps the id-indexed tables small. The
// table holds one entry (~70 bytes) per id up to the largest, so a single id of 2^26 in a tiny file
// asked for 4.8 GB; 2^21 ids (8x the largest vocabulary released, 262144) cost at most ~150 MB.
constexpr int64_t kMaxTokenId = (int64_t{1} << 21) - 1;

// ---------------------------------------------------------------------------------------------
// JSON access with errors that name the file and the field
// ---------------------------------------------------------------------------------------------

class JsonReader {
 public:
  explicit JsonReader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw FormatError(origin_ + ": field '" + field + "': " + msg);
  }

  const json* optional(const json& obj, const std::string& parent, const char* key) const {
    if (!obj.is_object()) fail(parent, std::string("expected an object, got ") + obj.type_name());
    auto it = obj.find(key);
    if (it == obj.end()) return nullptr;
    return &*it;
  }

  const json& required(const json& obj, const std::string& parent, const char* key) const {
    const json* v = optional(obj, parent, key);
    if (!v) fail(join(parent, key), "missing");
    return *v;
  }

  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, std::string("expected a string, got ") + v.type_name());
    return v.get<std::string>();
  }

  bool boolean(const json& obj, const std::string& parent, const char* key, bool dflt) const {
    const json* v = optional(obj, parent, key);
    if (!v || v->is_null()) return dflt;
    if (!v->is_boolean()) fail(join(parent, key), std::string("expected true or false, got ") + v->type_name());
    return v->get<bool>();
  }

  int32_t token_id(const json& v, const std::string& field) const {
    if (!v.is_number_integer()) fail(field, std::string("expected an integer token id, got ") + v.type_name());
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id > kMaxTokenId)
      fail(field, "token id " + std::to_string(id) + " is out of range (0 to " + std::to_string(kMaxTokenId) +
                      ", opchain's vocabulary limit)");
    return static_cast<int32_t>(id);
  }

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string index(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

// ---------------------------------------------------------------------------------------------
// Word cache: pre-tokenized words repeat heavily in real text, and a hit skips every merge
// lookup. Direct-mapped slots bound memory without eviction bookkeeping; shards keep lock
// contention negligible when several threads encode at once.
// ---------------------------------------------------------------------------------------------

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;

  bool lookup(std::string_view word, uint64_t hash, std::vector<int32_t>& out) {
    Shard& sh = shards_[hash % kShards];
    std::lock_guard<std::mutex> lock(sh.mu);
    if (sh.slots.empty()) return false;
    const Slot& s = sh.slots[(hash / kShards) % kSlots];
    if (s.hash != hash || s.key != word) return false;
    out.insert(out.end(), s.ids.begin(), s.ids.end());
    return true;
  }

  void insert(std::string_view word, uint64_t hash, std::span<const int32_t> ids) {
    Shard& sh = shards_[hash % kShards];
    std::lock_guard<std::mutex> lock(sh.mu);
    if (sh.slots.empty()) sh.slots.resize(kSlots);
    Slot& s = sh.slots[(hash / kShards) % kSlots];
    s.hash = hash;
    s.key.assign(word);
    s.ids.assign(ids.begin(), ids.end());
  }

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kSlots = 4096;
  struct Slot {
    uint64_t hash = 0;
    std::string key;
    std::vector<int32_t> ids;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Slot> slots;  // allocated on first insert
  };
  std::array<Shard, kShards> shards_;
};

// ---------------------------------------------------------------------------------------------
// Added tokens
// ---------------------------------------------------------------------------------------------

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// Leftmost-longest search over the added tokens' contents: the aho-corasick MatchKind Hugging
// Face uses. A byte trie is enough for tens to hundreds of short patterns; the first-byte filter
// lets the scan skip ordinary text quickly.
class AddedTokenTrie {
 public:
  bool empty() const { return nodes_.size() == 1; }

  void add(std::string_view pattern, int32_t value) {
    if (pattern.empty()) return;
    int32_t node = 0;
    for (const unsigned char c : pattern) {
      int32_t child = child_of(node, c);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_[node].next.emplace_back(c, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    nodes_[node].value = value;
    first_[static_cast<unsigned char>(pattern[0])] = true;
  }

  // Finds the leftmost match starting at or after `from`, taking the longest one there.
  bool find(std::string_view text, size_t from, size_t& begin, size_t& end, int32_t& value) const {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    for (size_t i = from; i < text.size(); ++i) {
      if (!first_[s[i]]) continue;
      int32_t node = 0;
      int32_t best = -1;
      size_t best_end = 0;
      for (size_t j = i; j < text.size(); ++j) {
        node = child_of(node, s[j]);
        if (node < 0) break;
        if (nodes_[node].value >= 0) {
          best = nodes_[node].value;
          best_end = j + 1;
        }
      }
      if (best >= 0) {
        begin = i;
        end = best_end;
        value = best;
        return true;
      }
    }
    return false;
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;
    int32_t value = -1;
  };
  int32_t child_of(int32_t node, unsigned char c) const {
    for (const auto& [b, child] : nodes_[node].next) {
      if (b == c) return child;
    }
    return -1;
  }
  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_{};
};

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer steps
// ---------------------------------------------------------------------------------------------

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokStep {
  enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
  std::unique_ptr<td::SplitPattern> pattern;  // null for ByteLevel with use_regex=false
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;  // ByteLevel only
};

struct Piece {
  size_t begin;
  size_t end;
  bool is_match;
};

// Applies a Split behaviour to the full list of (gap, match) pieces; mirrors
// NormalizedString::split in `tokenizers`. Returns pieces to keep.
std::vector<Piece> apply_behavior(std::vector<Piece> pieces, SplitBehavior behavior) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return pieces;
    case SplitBehavior::kRemoved:
      for (const Piece& p : pieces) {
        if (!p.is_match) out.push_back(p);
      }
      return out;
    case SplitBehavior::kContiguous:
      for (const Piece& p : pieces) {
        if (p.is_match == previous_match && !out.empty()) {
          out.back().end = p.end;
        } else {
          out.push_back(p);
        }
        previous_match = p.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithPrevious:
      for (const Piece& p : pieces) {
        if (p.is_match && !previous_match && !out.empty()) {
          out.back().end = p.end;
        } else {
          out.push_back(p);
        }
        previous_match = p.is_match;
      }
      return out;
    case SplitBehavior::kMergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      return out;
  }
  return out;
}

bool is_ascii(std::string_view s) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (w & 0x8080808080808080ULL) return false;
  }
  for (; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) >= 0x80) return false;
  }
  return true;
}

// The bytes a vocabulary string stands for when every character is in the byte alphabet;
// nullopt otherwise (such a token can never come out of byte-level encoding).
std::optional<std::string> from_byte_alphabet(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  const auto* s = reinterpret_cast<const unsigned char*>(raw.data());
  for (size_t i = 0; i < raw.size();) {
    size_t len;
    const int b = td::char_to_byte(td::decode_utf8(s, i, len));
    if (b < 0) return std::nullopt;
    out += static_cast<char>(b);
    i += len;
  }
  return out;
}

// What the ByteLevel decoder emits for one token: its bytes if it is spelled in the byte
// alphabet, the string unchanged otherwise (added tokens such as "<|im_end|>" take either path).
std::string byte_level_decode(std::string_view raw) { return from_byte_alphabet(raw).value_or(std::string(raw)); }

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Open-addressing index from a string to an id, where the string itself lives in an id-indexed
// table (passed to each call). Building the 150k-entry vocabulary this way avoids a node and a
// string copy per token, which dominated load time with std::unordered_map.
class StringIndex {
 public:
  void reserve(size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap <<= 1;
    slots_.assign(cap, Slot{0, -1});
    mask_ = cap - 1;
  }

  // `key_of(id)` returns the stored string of id. Returns false if the key is already present.
  template <class KeyOf>
  bool insert(std::string_view key, int32_t id, const KeyOf& key_of) {
    const uint64_t h = std::hash<std::string_view>{}(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& sl = slots_[i];
      if (sl.id < 0) {
        sl = Slot{h, id};
        return true;
      }
      if (sl.hash == h && key_of(sl.id) == key) return false;
    }
  }

  template <class KeyOf>
  int32_t find(std::string_view key, const KeyOf& key_of) const {
    if (slots_.empty()) return -1;
    const uint64_t h = std::hash<std::string_view>{}(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.id < 0) return -1;
      if (sl.hash == h && key_of(sl.id) == key) return sl.id;
    }
  }

 private:
  struct Slot {
    uint64_t hash;
    int32_t id;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------

struct Tokenizer::Impl {
  enum : uint8_t { kExists = 1, kSpecial = 2, kModel = 4 };
  struct TokenInfo {
    std::string raw;    // tokenizer.json spelling
    std::string bytes;  // what decode() emits for it
    uint8_t flags = 0;
  };

  std::string origin;
  std::vector<const icu::Normalizer2*> normalizers;
  std::vector<PreTokStep> pretok;
  size_t passthrough_from = 0;  // steps from here on leave pieces unchanged (ByteLevel without regex)

  std::vector<TokenInfo> tokens;  // indexed by id
  StringIndex vocab;              // model vocabulary: tokens[id].raw -> id
  StringIdMap added_by_content;
  StringIndex vocab_by_bytes;              // tokens[id].bytes -> id for byte-alphabet tokens; only with ignore_merges
  std::array<int32_t, 256> byte_symbol{};  // initial BPE symbol per byte, -1 if none
  td::MergeTable merges;
  bool ignore_merges = false;
  int32_t unk_id = -1;
  bool fuse_unk = false;

  auto raw_of() const {
    return [this](int32_t id) -> std::string_view { return tokens[static_cast<size_t>(id)].raw; };
  }
  auto bytes_of() const {
    return [this](int32_t id) -> std::string_view { return tokens[static_cast<size_t>(id)].bytes; };
  }
  int32_t vocab_find(std::string_view raw) const { return vocab.find(raw, raw_of()); }

  std::vector<AddedToken> added;
  AddedTokenTrie raw_trie;         // normalized=false tokens, matched on the raw text
  AddedTokenTrie normalized_trie;  // normalized=true tokens, matched after normalisation

  mutable WordCache cache;

  // --- encode -------------------------------------------------------------------------------

  void encode(std::string_view text, bool match_special, std::vector<int32_t>& ids) const {
    std::string repaired;
    if (!td::is_valid_utf8(text)) {
      td::append_utf8_lossy(repaired, text);
      text = repaired;
    }
    split_added(text, raw_trie, match_special, [&](std::string_view seg, int32_t id) {
      if (id >= 0) {
        ids.push_back(id);
        return;
      }
      std::string buf;
      const std::string_view norm = normalize(seg, buf);
      split_added(norm, normalized_trie, match_special, [&](std::string_view seg2, int32_t id2) {
        if (id2 >= 0) {
          ids.push_back(id2);
          return;
        }
        pre_tokenize(seg2, 0, [&](std::string_view word) { bpe(word, ids); });
      });
    });
  }

  // Calls emit(segment, -1) for text between added tokens and emit({}, id) for each token, in
  // order. Mirrors AddedVocabulary::find_matches, including the single_word/lstrip/rstrip rules.
  void split_added(std::string_view text, const AddedTokenTrie& trie, bool match_special,
                   td::FunctionRef<void(std::string_view, int32_t)> emit) const {
    if (text.empty()) return;
    if (trie.empty()) {
      emit(text, -1);
      return;
    }
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t start_offset = 0;
    size_t pos = 0;
    size_t b = 0, e = 0;
    int32_t index = -1;
    while (trie.find(text, pos, b, e, index)) {
      pos = e;
      const AddedToken& t = added[static_cast<size_t>(index)];
      if (!match_special && t.special) continue;
      if (t.single_word) {
        const bool word_before = b > 0 && td::is_word_char(char_before(s, b));
        size_t len;
        const bool word_after = e < text.size() && td::is_word_char(td::decode_utf8(s, e, len));
        if (word_before || word_after) continue;
      }
      size_t start = b;
      size_t stop = e;
      if (t.lstrip) {
        size_t k = b;
        while (k > 0) {
          size_t prev = k - 1;
          while (prev > 0 && (s[prev] & 0xC0) == 0x80) --prev;
          size_t len;
          if (!td::is_white_space(td::decode_utf8(s, prev, len))) break;
          k = prev;
        }
        start = std::max(k, start_offset);
      }
      if (t.rstrip) {
        while (stop < text.size()) {
          size_t len;
          if (!td::is_white_space(td::decode_utf8(s, stop, len))) break;
          stop += len;
        }
      }
      // A previous token's rstrip already consumed this match's start; Hugging Face would emit
      // overlapping pieces here, which cannot round-trip, so the later match is dropped.
      if (start < start_offset) continue;
      if (start_offset < start) emit(text.substr(start_offset, start - start_offset), -1);
      emit({}, t.id);
      start_offset = stop;
    }
    if (start_offset < text.size()) emit(text.substr(start_offset), -1);
  }

  static char32_t char_before(const unsigned char* s, size_t pos) {
    size_t prev = pos - 1;
    while (prev > 0 && (s[prev] & 0xC0) == 0x80) --prev;
    size_t len;
    return td::decode_utf8(s, prev, len);
  }

  std::string_view normalize(std::string_view s, std::string& buf) const {
    // Every Unicode normal form leaves ASCII unchanged.
    if (normalizers.empty() || is_ascii(s)) return s;
    if (s.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      throw InvalidArgumentError("text between special tokens is over 2 GiB; ICU cannot normalise it");
    }
    std::string tmp;
    for (const icu::Normalizer2* n : normalizers) {
      UErrorCode status = U_ZERO_ERROR;
      const icu::StringPiece piece(s.data(), static_cast<int32_t>(s.size()));
      if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) continue;
      tmp.clear();
      icu::StringByteSink<std::string> sink(&tmp);
      status = U_ZERO_ERROR;
      n->normalizeUTF8(0, piece, sink, nullptr, status);
      if (U_FAILURE(status)) throw Error(std::string("Unicode normalisation failed: ") + u_errorName(status));
      buf.swap(tmp);
      s = buf;
    }
    return s;
  }

  void pre_tokenize(std::string_view s, size_t step, td::FunctionRef<void(std::string_view)> emit) const {
    if (s.empty()) return;
    if (step >= passthrough_from) {
      emit(s);
      return;
    }
    const PreTokStep& st = pretok[step];
    std::string prefixed;
    if (st.kind == PreTokStep::Kind::kByteLevel) {
      if (st.add_prefix_space && s.front() != ' ') {
        prefixed.reserve(s.size() + 1);
        prefixed += ' ';
        prefixed += s;
        s = prefixed;
      }
      if (!st.pattern) {
        pre_tokenize(s, step + 1, emit);
        return;
      }
    }
    // Isolated keeps every gap and match as its own piece; invert swaps which is which, so it
    // cannot change the outcome. This is the path real tokenizers take, so it avoids the list.
    if (st.kind == PreTokStep::Kind::kByteLevel || st.behavior == SplitBehavior::kIsolated) {
      size_t prev = 0;
      st.pattern->for_each_match(s, [&](td::Span m) {
        if (m.begin > prev) pre_tokenize(s.substr(prev, m.begin - prev), step + 1, emit);
        pre_tokenize(s.substr(m.begin, m.end - m.begin), step + 1, emit);
        prev = m.end;
      });
      if (prev < s.size()) pre_tokenize(s.substr(prev), step + 1, emit);
      return;
    }
    std::vector<Piece> pieces;
    size_t prev = 0;
    st.pattern->for_each_match(s, [&](td::Span m) {
      if (m.begin > prev) pieces.push_back(Piece{prev, m.begin, st.invert});
      pieces.push_back(Piece{m.begin, m.end, !st.invert});
      prev = m.end;
    });
    if (prev < s.size()) pieces.push_back(Piece{prev, s.size(), st.invert});
    for (const Piece& p : apply_behavior(std::move(pieces), st.behavior)) {
      pre_tokenize(s.substr(p.begin, p.end - p.begin), step + 1, emit);
    }
  }

  // --- BPE ----------------------------------------------------------------------------------

  void bpe(std::string_view word, std::vector<int32_t>& out) const {
    const auto* s = reinterpret_cast<const unsigned char*>(word.data());
    if (word.size() == 1 && byte_symbol[s[0]] >= 0) {
      out.push_back(byte_symbol[s[0]]);
      return;
    }
    if (ignore_merges) {
      if (const int32_t id = vocab_by_bytes.find(word, bytes_of()); id >= 0) {
        out.push_back(id);
        return;
      }
    }
    const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
    uint64_t hash = 0;
    if (cacheable) {
      hash = std::hash<std::string_view>{}(word);
      if (cache.lookup(word, hash, out)) return;
    }
    const size_t before = out.size();
    merge_word(s, word.size(), out);
    if (cacheable) cache.insert(word, hash, std::span<const int32_t>(out).subspan(before));
  }

  // Initial symbols, one per byte; bytes missing from the vocabulary become the unk token (runs
  // fused when fuse_unk) or are dropped when there is none, as `tokenizers` does.
  template <class Push>
  void initial_symbols(const unsigned char* s, size_t n, Push push) const {
    bool pending_unk = false;
    for (size_t i = 0; i < n; ++i) {
      const int32_t id = byte_symbol[s[i]];
      if (id >= 0) {
        if (pending_unk) push(unk_id);
        pending_unk = false;
        push(id);
      } else if (unk_id >= 0) {
        if (pending_unk && !fuse_unk) push(unk_id);
        pending_unk = true;
      }
    }
    if (pending_unk) push(unk_id);
  }

  void merge_word(const unsigned char* s, size_t n, std::vector<int32_t>& out) const {
    if (n <= td::kSmallWord) {
      int32_t sym[td::kSmallWord];
      size_t m = 0;
      initial_symbols(s, n, [&](int32_t id) { sym[m++] = id; });
      m = td::merge_small(merges, sym, m);
      out.insert(out.end(), sym, sym + m);
    } else {
      std::vector<int32_t> sym;
      sym.reserve(n);
      initial_symbols(s, n, [&](int32_t id) { sym.push_back(id); });
      td::merge_large(merges, sym);
      out.insert(out.end(), sym.begin(), sym.end());
    }
  }

  const TokenInfo* info(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= tokens.size()) return nullptr;
    const TokenInfo& t = tokens[static_cast<size_t>(id)];
    return (t.flags & kExists) ? &t : nullptr;
  }
};

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

namespace {

const icu::Normalizer2* normalizer_for(const std::string& type, const JsonReader& r, const std::string& field) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  if (type == "NFC") {
    n = icu::Normalizer2::getNFCInstance(status);
  } else if (type == "NFD") {
    n = icu::Normalizer2::getNFDInstance(status);
  } else if (type == "NFKC") {
    n = icu::Normalizer2::getNFKCInstance(status);
  } else if (type == "NFKD") {
    n = icu::Normalizer2::getNFKDInstance(status);
  } else {
    r.fail(field, "unsupported normalizer type '" + type + "' (supported: NFC, NFD, NFKC, NFKD, Sequence, null)");
  }
  if (U_FAILURE(status) || !n) r.fail(field, std::string("ICU cannot provide ") + type + ": " + u_errorName(status));
  return n;
}

void parse_normalizer(const json& v, const std::string& field, const JsonReader& r,
                      std::vector<const icu::Normalizer2*>& out) {
  if (v.is_null()) return;
  const std::string type = r.string(r.required(v, field, "type"), field + ".type");
  if (type == "Sequence") {
    const json& list = r.required(v, field, "normalizers");
    if (!list.is_array()) r.fail(field + ".normalizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_normalizer(list[i], JsonReader::index(field + ".normalizers", i), r, out);
    }
    return;
  }
  out.push_back(normalizer_for(type, r, field + ".type"));
}

void parse_pre_tokenizer(const json& v, const std::string& field, const JsonReader& r, std::vector<PreTokStep>& out) {
  if (v.is_null()) return;
  const std::string type = r.string(r.required(v, field, "type"), field + ".type");
  if (type == "Sequence") {
    const json& list = r.required(v, field, "pretokenizers");
    if (!list.is_array()) r.fail(field + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_pre_tokenizer(list[i], JsonReader::index(field + ".pretokenizers", i), r, out);
    }
    return;
  }
  PreTokStep step;
  if (type == "ByteLevel") {
    step.kind = PreTokStep::Kind::kByteLevel;
    // Hugging Face's defaults when the keys are absent.
    step.add_prefix_space = r.boolean(v, field, "add_prefix_space", true);
    if (r.boolean(v, field, "use_regex", true))
      step.pattern = td::compile_regex(td::kGpt2Pattern, r.origin() + ": " + field);
  } else if (type == "Split") {
    step.kind = PreTokStep::Kind::kSplit;
    const json& pattern = r.required(v, field, "pattern");
    const std::string pfield = field + ".pattern";
    if (const json* re = r.optional(pattern, pfield, "Regex")) {
      step.pattern = td::compile_regex(r.string(*re, pfield + ".Regex"), r.origin() + ": field '" + pfield + ".Regex'");
    } else if (const json* lit = r.optional(pattern, pfield, "String")) {
      step.pattern = td::compile_literal(r.string(*lit, pfield + ".String"));
    } else {
      r.fail(pfield, "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    const std::string behavior = r.string(r.required(v, field, "behavior"), field + ".behavior");
    if (behavior == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (behavior == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = SplitBehavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = SplitBehavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      step.behavior = SplitBehavior::kContiguous;
    } else {
      r.fail(field + ".behavior", "unsupported split behavior '" + behavior + "'");
    }
    step.invert = r.boolean(v, field, "invert", false);
  } else {
    r.fail(field + ".type", "unsupported pre-tokenizer type '" + type + "' (supported: Sequence, Split, ByteLevel)");
  }
  out.push_back(std::move(step));
}

void check_empty_option(const json& model, const char* key, const JsonReader& r) {
  const json* v = r.optional(model, "model", key);
  if (!v || v->is_null() || (v->is_string() && v->get<std::string>().empty())) return;
  r.fail(std::string("model.") + key, "is not supported by this byte-level BPE (got " + json_excerpt(*v) + ")");
}

// ---------------------------------------------------------------------------------------------
// Streaming JSON: model.vocab and model.merges hold hundreds of thousands of entries, and
// nlohmann's DOM (a std::map node per token, a json array per merge pair) made parsing two
// thirds of load time. This SAX handler streams those two into flat vectors and builds an
// ordinary DOM for the rest of the file, which is small.
// ---------------------------------------------------------------------------------------------

struct MergeEntry {
  std::string left;  // or the whole "left right" line
  std::string right;
  bool is_line = false;
};

struct ParsedTokenizerJson {
  json root;  // model.vocab / model.merges are empty placeholders when streamed
  bool vocab_streamed = false;
  bool merges_streamed = false;
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<MergeEntry> merges;
};

class TokenizerJsonSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  TokenizerJsonSax(ParsedTokenizerJson& out, const JsonReader& r) : out_(out), r_(r) {}

  bool null() { return scalar(nullptr, "null"); }
  bool boolean(bool v) { return scalar(v, "boolean"); }
  bool number_integer(number_integer_t v) { return integer(v); }
  bool number_unsigned(number_unsigned_t v) {
    return integer(v > static_cast<number_unsigned_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t&) { return scalar(v, "number"); }
  bool binary(binary_t&) { return true; }  // never produced by JSON text

  bool string(string_t& v) {
    switch (mode_) {
      case Mode::kMerges:
        out_.merges.push_back(MergeEntry{std::move(v), {}, true});
        return true;
      case Mode::kMergePair:
        if (++pair_len_ == 1) {
          pending_.left = std::move(v);
        } else if (pair_len_ == 2) {
          pending_.right = std::move(v);
        }
        return true;
      default:
        return scalar(std::move(v), "string");
    }
  }

  bool start_object(std::size_t) {
    if (mode_ == Mode::kDom && at_model_field("vocab")) {
      mode_ = Mode::kVocab;
      return true;
    }
    if (mode_ != Mode::kDom) bad_element("object");
    open(json::object());
    return true;
  }

  bool key(string_t& k) {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
    } else {
      frames_.back().key = std::move(k);
    }
    return true;
  }

  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      out_.vocab_streamed = true;
      add(json::object());
      return true;
    }
    close();
    return true;
  }

  bool start_array(std::size_t) {
    if (mode_ == Mode::kDom && at_model_field("merges")) {
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_len_ = 0;
      pending_ = MergeEntry{};
      return true;
    }
    if (mode_ != Mode::kDom) bad_element("array");
    open(json::array());
    return true;
  }

  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (pair_len_ != 2) bad_element("array of " + std::to_string(pair_len_) + " strings");
      out_.merges.push_back(std::move(pending_));
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      out_.merges_streamed = true;
      add(json::array());
      return true;
    }
    close();
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    throw FormatError(r_.origin() + ": malformed JSON: " + e.what());
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };
  struct Frame {
    json* value;
    std::string key;  // last key seen, for objects
  };

  // True when the container about to open is the value of root["model"][field].
  bool at_model_field(const char* field) const {
    return frames_.size() == 2 && frames_[0].value->is_object() && frames_[0].key == "model" &&
           frames_[1].value->is_object() && frames_[1].key == field;
  }

  template <class V>
  bool scalar(V&& v, const char* type) {
    if (mode_ != Mode::kDom) bad_element(type);
    add(json(std::forward<V>(v)));
    return true;
  }

  bool integer(int64_t v) {
    if (mode_ == Mode::kVocab) {
      if (v < 0 || v > kMaxTokenId) {
        r_.fail("model.vocab[\"" + vocab_key_ + "\"]", "token id " + std::to_string(v) + " is out of range (0 to " +
                                                           std::to_string(kMaxTokenId) +
                                                           ", opchain's vocabulary limit)");
      }
      out_.vocab.emplace_back(std::move(vocab_key_), static_cast<int32_t>(v));
      return true;
    }
    return scalar(v, "number");
  }

  [[noreturn]] void bad_element(const std::string& type) const {
    if (mode_ == Mode::kVocab) {
      r_.fail("model.vocab[\"" + vocab_key_ + "\"]", "expected an integer token id, got " + type);
    }
    r_.fail(JsonReader::index("model.merges", out_.merges.size()),
            "expected \"left right\" or [\"left\", \"right\"], got " + type);
  }

  json* add(json&& v) {
    if (frames_.empty()) {
      out_.root = std::move(v);
      return &out_.root;
    }
    json& parent = *frames_.back().value;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[frames_.back().key];
    slot = std::move(v);
    return &slot;
  }
  void open(json&& container) { frames_.push_back(Frame{add(std::move(container)), {}}); }
  void close() { frames_.pop_back(); }

  ParsedTokenizerJson& out_;
  const JsonReader& r_;
  std::vector<Frame> frames_;
  Mode mode_ = Mode::kDom;
  std::string vocab_key_;
  MergeEntry pending_;
  size_t pair_len_ = 0;
};

std::shared_ptr<Tokenizer::Impl> build(ParsedTokenizerJson& parsed, const JsonReader& r) {
  const std::string& origin = r.origin();
  const json& root = parsed.root;
  if (!root.is_object()) throw FormatError(origin + ": expected a JSON object at the top level");
  auto impl = std::make_shared<Tokenizer::Impl>();
  impl->origin = origin;

  // --- model ---
  const json& model = r.required(root, "", "model");
  if (const json* type = r.optional(model, "model", "type")) {
    const std::string t = r.string(*type, "model.type");
    if (t != "BPE") r.fail("model.type", "unsupported model type '" + t + "' (supported: BPE)");
  }
  if (const json* dropout = r.optional(model, "model", "dropout"); dropout && !dropout->is_null()) {
    if (!dropout->is_number() || dropout->get<double>() != 0.0) {
      r.fail("model.dropout", "BPE dropout is not supported (got " + json_excerpt(*dropout) + ")");
    }
  }
  check_empty_option(model, "continuing_subword_prefix", r);
  check_empty_option(model, "end_of_word_suffix", r);
  const bool byte_fallback = r.boolean(model, "model", "byte_fallback", false);
  impl->ignore_merges = r.boolean(model, "model", "ignore_merges", false);
  impl->fuse_unk = r.boolean(model, "model", "fuse_unk", false);

  if (!parsed.vocab_streamed) {
    const json& vocab = r.required(model, "model", "vocab");
    r.fail("model.vocab", std::string("expected an object of token: id, got ") + vocab.type_name());
  }
  if (parsed.vocab.empty()) r.fail("model.vocab", "is empty");
  int64_t max_id = -1;
  for (const auto& [raw, id] : parsed.vocab) max_id = std::max<int64_t>(max_id, id);
  impl->tokens.resize(static_cast<size_t>(max_id + 1));
  impl->vocab.reserve(parsed.vocab.size());
  for (auto& [raw, id] : parsed.vocab) {
    auto& t = impl->tokens[static_cast<size_t>(id)];
    if (t.flags & Tokenizer::Impl::kModel) {
      r.fail("model.vocab", "token id " + std::to_string(id) + " is given to both '" + t.raw + "' and '" + raw + "'");
    }
    t.raw = std::move(raw);
    t.flags = Tokenizer::Impl::kExists | Tokenizer::Impl::kModel;
    if (!impl->vocab.insert(t.raw, id, impl->raw_of())) r.fail("model.vocab", "token '" + t.raw + "' appears twice");
  }
  const size_t vocab_count = parsed.vocab.size();
  parsed.vocab = {};

  // --- added tokens ---
  std::vector<AddedToken> added;
  if (const json* list = r.optional(root, "", "added_tokens"); list && !list->is_null()) {
    if (!list->is_array()) r.fail("added_tokens", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string field = JsonReader::index("added_tokens", i);
      const json& t = (*list)[i];
      AddedToken a;
      a.content = r.string(r.required(t, field, "content"), field + ".content");
      a.id = r.token_id(r.required(t, field, "id"), field + ".id");
      a.special = r.boolean(t, field, "special", false);
      a.lstrip = r.boolean(t, field, "lstrip", false);
      a.rstrip = r.boolean(t, field, "rstrip", false);
      a.single_word = r.boolean(t, field, "single_word", false);
      a.normalized = r.boolean(t, field, "normalized", !a.special);
      if (a.content.empty()) continue;  // Hugging Face ignores empty added tokens
      if (!td::is_valid_utf8(a.content)) r.fail(field + ".content", "is not valid UTF-8");
      // A token already in the model vocabulary keeps that id, as in `tokenizers`.
      if (const int32_t in_vocab = impl->vocab_find(a.content); in_vocab >= 0) {
        a.id = in_vocab;
      } else if (static_cast<size_t>(a.id) < impl->tokens.size() &&
                 (impl->tokens[static_cast<size_t>(a.id)].flags & Tokenizer::Impl::kModel)) {
        r.fail(field + ".id", "id " + std::to_string(a.id) + " of '" + a.content + "' is already model.vocab token '" +
                                  impl->tokens[static_cast<size_t>(a.id)].raw + "'");
      }
      max_id = std::max<int64_t>(max_id, a.id);
      added.push_back(std::move(a));
    }
  }

  // --- id tables ---
  impl->tokens.resize(static_cast<size_t>(max_id + 1));
  for (auto& t : impl->tokens) {
    if (t.flags & Tokenizer::Impl::kModel) t.bytes = byte_level_decode(t.raw);
  }
  for (const AddedToken& a : added) {
    auto& t = impl->tokens[static_cast<size_t>(a.id)];
    t.raw = a.content;
    t.bytes = byte_level_decode(a.content);
    t.flags |= static_cast<uint8_t>(Tokenizer::Impl::kExists | (a.special ? Tokenizer::Impl::kSpecial : 0));
    impl->added_by_content[a.content] = a.id;
  }

  // --- byte alphabet ---
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    td::append_utf8(ch, td::byte_to_char(static_cast<uint8_t>(b)));
    int32_t id = impl->vocab_find(ch);
    if (id < 0 && byte_fallback) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", b);
      id = impl->vocab_find(hex);
    }
    impl->byte_symbol[static_cast<size_t>(b)] = id;
  }
  if (const json* unk = r.optional(model, "model", "unk_token"); unk && !unk->is_null()) {
    const std::string u = r.string(*unk, "model.unk_token");
    impl->unk_id = impl->vocab_find(u);
    if (impl->unk_id < 0) r.fail("model.unk_token", "token '" + u + "' is not in model.vocab");
  }
  if (impl->ignore_merges) {
    impl->vocab_by_bytes.reserve(vocab_count);
    for (size_t id = 0; id < impl->tokens.size(); ++id) {
      // Only tokens spelled in the byte alphabet can be produced by byte-level encoding.
      const auto& t = impl->tokens[id];
      if (!(t.flags & Tokenizer::Impl::kModel) || !from_byte_alphabet(t.raw)) continue;
      impl->vocab_by_bytes.insert(t.bytes, static_cast<int32_t>(id), impl->bytes_of());
    }
  }

  // --- merges ---
  if (!parsed.merges_streamed) {
    const json& merges = r.required(model, "model", "merges");
    r.fail("model.merges", std::string("expected an array, got ") + merges.type_name());
  }
  impl->merges.reserve(parsed.merges.size());
  uint32_t rank = 0;
  std::string joined;
  for (size_t i = 0; i < parsed.merges.size(); ++i) {
    const MergeEntry& m = parsed.merges[i];
    auto field = [i] { return JsonReader::index("model.merges", i); };
    std::string_view a = m.left, b = m.right;
    if (m.is_line) {
      const std::string_view line = m.left;
      if (line.starts_with("#version")) continue;
      const size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos) {
        r.fail(field(), "expected \"left right\" separated by one space, got \"" + std::string(line) + "\"");
      }
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    }
    joined.assign(a);
    joined.append(b);
    const int32_t ia = impl->vocab_find(a);
    const int32_t ib = impl->vocab_find(b);
    const int32_t im = impl->vocab_find(joined);
    if (ia < 0) r.fail(field(), "token '" + std::string(a) + "' is not in model.vocab");
    if (ib < 0) r.fail(field(), "token '" + std::string(b) + "' is not in model.vocab");
    if (im < 0) r.fail(field(), "merged token '" + joined + "' is not in model.vocab");
    impl->merges.insert(ia, ib, rank++, im);
  }
  parsed.merges = {};

  // --- normalizer, pre-tokenizer, decoder ---
  if (const json* n = r.optional(root, "", "normalizer")) parse_normalizer(*n, "normalizer", r, impl->normalizers);
  if (const json* p = r.optional(root, "", "pre_tokenizer")) parse_pre_tokenizer(*p, "pre_tokenizer", r, impl->pretok);
  const auto byte_level_steps = std::count_if(impl->pretok.begin(), impl->pretok.end(), [](const PreTokStep& s) {
    return s.kind == PreTokStep::Kind::kByteLevel;
  });
  if (byte_level_steps == 0) {
    r.fail("pre_tokenizer", "has no ByteLevel step; only byte-level BPE tokenizers are supported");
  }
  // Later steps would see the byte alphabet instead of text; no real tokenizer does that.
  if (impl->pretok.back().kind != PreTokStep::Kind::kByteLevel || byte_level_steps != 1) {
    r.fail("pre_tokenizer", "ByteLevel must be the last step and appear once");
  }
  impl->passthrough_from = impl->pretok.size();
  while (impl->passthrough_from > 0) {
    const PreTokStep& st = impl->pretok[impl->passthrough_from - 1];
    if (st.kind != PreTokStep::Kind::kByteLevel || st.pattern || st.add_prefix_space) break;
    --impl->passthrough_from;
  }
  const json& decoder = r.required(root, "", "decoder");
  if (decoder.is_null()) r.fail("decoder", "is null; a ByteLevel decoder is required");
  const std::string dtype = r.string(r.required(decoder, "decoder", "type"), "decoder.type");
  if (dtype != "ByteLevel") r.fail("decoder.type", "unsupported decoder type '" + dtype + "' (supported: ByteLevel)");

  // --- added token matchers (after the normalizer, which normalized tokens go through) ---
  impl->added = std::move(added);
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& a = impl->added[i];
    if (a.normalized) {
      std::string buf;
      impl->normalized_trie.add(impl->normalize(a.content, buf), static_cast<int32_t>(i));
    } else {
      impl->raw_trie.add(a.content, static_cast<int32_t>(i));
    }
  }
  return impl;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::string& tokenizer_json_path) {
  std::ifstream f(tokenizer_json_path, std::ios::binary);
  if (!f) throw FormatError(tokenizer_json_path + ": cannot open tokenizer file: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw FormatError(tokenizer_json_path + ": read error");
  return from_json_text(ss.str(), tokenizer_json_path);
}

Tokenizer Tokenizer::from_model_directory(const ModelDirectory& dir) {
  if (!dir.tokenizer.exists()) throw FormatError("no " + std::string(model_file::kTokenizer) + " in " + dir.dir);
  return from_json_text(*dir.tokenizer.text, dir.tokenizer.path);
}

Tokenizer Tokenizer::from_json_text(const std::string& text, const std::string& origin_for_errors) {
  const JsonReader r(origin_for_errors);
  ParsedTokenizerJson parsed;
  TokenizerJsonSax sax(parsed, r);
  return guard_input(origin_for_errors, [&] {
    check_json_nesting(text, origin_for_errors);
    // parse_error() throws, so a false return cannot happen; keep the check for safety.
    if (!json::sax_parse(text, &sax)) throw FormatError(origin_for_errors + ": malformed JSON");
    return Tokenizer(build(parsed, r));
  });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const { return encode(text, true); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool match_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  impl_->encode(text, match_special_tokens, ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (const int32_t id : ids) {
    const Impl::TokenInfo* t = impl_->info(id);
    if (!t || (skip_special_tokens && (t->flags & Impl::kSpecial))) continue;
    bytes += t->bytes;
  }
  if (td::is_valid_utf8(bytes)) return bytes;
  std::string out;
  td::append_utf8_lossy(out, bytes);
  return out;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  const Impl::TokenInfo* t = impl_->info(id);
  if (!t) {
    throw InvalidArgumentError("token id " + std::to_string(id) + " has no token in " + impl_->origin +
                               " (vocab_size " + std::to_string(vocab_size()) + ")");
  }
  return t->raw;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end()) return it->second;
  if (const int32_t id = impl_->vocab_find(token); id >= 0) return id;
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  const Impl::TokenInfo* t = impl_->info(id);
  return t && (t->flags & Impl::kSpecial);
}

size_t Tokenizer::vocab_size() const { return impl_->tokens.size(); }

std::string Tokenizer::token_bytes(int32_t id) const {
  const Impl::TokenInfo* t = impl_->info(id);
  return t ? t->bytes : std::string();
}

}  // namespace opchain
