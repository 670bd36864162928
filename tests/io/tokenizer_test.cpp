// Tokenizer tests: golden ids from Hugging Face for the official Qwen3 tokenizer and the small
// model tokenizers, pre-tokenizer agreement between the hand-written and ICU regex paths, the
// tokenizer.json options real files use, and error messages for malformed files.
#include "io/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "io/tokenizer_detail.h"

namespace opchain {
namespace {

using json = nlohmann::json;
namespace td = tokenizer_detail;

std::string data_path(const std::string& rel) { return std::string(OPCHAIN_TEST_DATA_DIR) + "/" + rel; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Printable form of a test string for failure messages.
std::string show(std::string_view s, size_t max = 80) {
  std::string out = json(std::string(s.substr(0, max))).dump();
  if (s.size() > max) out += "...";
  return out;
}

std::string show_ids(const std::vector<int32_t>& ids, size_t max = 40) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < max; ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  if (ids.size() > max) out += ",...";
  return out + "] (" + std::to_string(ids.size()) + " ids)";
}

const Tokenizer& qwen3() {
  static const Tokenizer t = Tokenizer::from_file(data_path("tokenizer/qwen3/tokenizer.json"));
  return t;
}

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
  std::string decoded_skip_special;
};

const std::vector<GoldenCase>& golden() {
  static const std::vector<GoldenCase> cases = [] {
    std::vector<GoldenCase> out;
    std::istringstream lines(read_file(data_path("tokenizer/tok_expected.jsonl")));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      const json j = json::parse(line);
      out.push_back(GoldenCase{j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>(),
                               j.at("decoded").get<std::string>(), j.at("decoded_skip_special").get<std::string>()});
    }
    return out;
  }();
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Golden data
// ---------------------------------------------------------------------------------------------

TEST(TokenizerGolden, CasesFileMatchesExpectations) {
  const json cases = json::parse(read_file(data_path("tokenizer/tok_cases.json")));
  ASSERT_EQ(cases.size(), 184u);
  ASSERT_EQ(golden().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(cases[i].get<std::string>(), golden()[i].text) << "case " << i;
}

TEST(TokenizerGolden, Qwen3EncodeMatchesAllCases) {
  size_t passed = 0;
  for (size_t i = 0; i < golden().size(); ++i) {
    const GoldenCase& c = golden()[i];
    const std::vector<int32_t> ids = qwen3().encode(c.text);
    if (ids == c.ids) {
      ++passed;
      continue;
    }
    size_t k = 0;
    while (k < ids.size() && k < c.ids.size() && ids[k] == c.ids[k]) ++k;
    ADD_FAILURE() << "case " << i << " " << show(c.text) << "\n  got      " << show_ids(ids) << "\n  expected "
                  << show_ids(c.ids) << "\n  first difference at index " << k;
  }
  EXPECT_EQ(passed, golden().size());
}

TEST(TokenizerGolden, Qwen3DecodeMatchesAllCases) {
  for (size_t i = 0; i < golden().size(); ++i) {
    const GoldenCase& c = golden()[i];
    EXPECT_EQ(qwen3().decode(c.ids), c.decoded) << "case " << i << " " << show(c.text);
    EXPECT_EQ(qwen3().decode(c.ids, /*skip_special_tokens=*/true), c.decoded_skip_special)
        << "case " << i << " " << show(c.text);
  }
}

// Streaming detokenisation concatenates token_bytes; on whole sequences it must equal decode().
TEST(TokenizerGolden, Qwen3TokenBytesConcatenateToDecode) {
  for (size_t i = 0; i < golden().size(); ++i) {
    const GoldenCase& c = golden()[i];
    std::string bytes;
    for (const int32_t id : c.ids) bytes += qwen3().token_bytes(id);
    EXPECT_EQ(bytes, c.decoded) << "case " << i << " " << show(c.text);
  }
}

TEST(TokenizerGolden, ModelTokenizersMatchExpectations) {
  const char* models[] = {"tiny-llama", "tiny-qwen2-moe", "tiny-qwen3-dense", "tiny-qwen3-moe", "trained-qwen3-moe"};
  for (const char* model : models) {
    SCOPED_TRACE(model);
    const std::string dir = data_path(std::string("models/") + model);
    const Tokenizer tok = Tokenizer::from_file(dir + "/tokenizer.json");
    const json expect = json::parse(read_file(dir + "/tokenizer_expect.json"));
    ASSERT_FALSE(expect.empty());
    for (const json& e : expect) {
      const std::string text = e.at("text").get<std::string>();
      const std::vector<int32_t> want = e.at("ids").get<std::vector<int32_t>>();
      const std::vector<int32_t> got = tok.encode(text);
      EXPECT_EQ(got, want) << show(text) << "\n  got      " << show_ids(got) << "\n  expected " << show_ids(want);
      EXPECT_EQ(tok.decode(want), text);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Qwen3 vocabulary and API details
// ---------------------------------------------------------------------------------------------

TEST(Tokenizer, Qwen3VocabularyAndSpecialTokens) {
  const Tokenizer& t = qwen3();
  EXPECT_EQ(t.vocab_size(), 151669u);
  EXPECT_EQ(t.token_to_id("<|endoftext|>"), 151643);
  EXPECT_EQ(t.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.token_to_id("<think>"), 151667);
  EXPECT_EQ(t.token_to_id("Ġ"), 220);
  EXPECT_EQ(t.token_to_id("not a token at all"), std::nullopt);
  EXPECT_TRUE(t.is_special(151643));
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(151667));  // <think> is added but not special
  EXPECT_FALSE(t.is_special(220));
  EXPECT_FALSE(t.is_special(-1));
  EXPECT_FALSE(t.is_special(1 << 30));
  EXPECT_EQ(t.id_to_token(220), "Ġ");
  EXPECT_EQ(t.id_to_token(151645), "<|im_end|>");
  EXPECT_EQ(t.token_bytes(220), " ");
  EXPECT_EQ(t.token_bytes(198), "\n");
  EXPECT_EQ(t.token_bytes(151645), "<|im_end|>");
  EXPECT_EQ(t.token_bytes(-5), "");
  EXPECT_THROW(t.id_to_token(-1), InvalidArgumentError);
  EXPECT_THROW(t.id_to_token(151669), InvalidArgumentError);
  // Every id below vocab_size round-trips through its spelling.
  for (int32_t id = 0; id < static_cast<int32_t>(t.vocab_size()); id += 97) {
    EXPECT_EQ(t.token_to_id(t.id_to_token(id)), id);
  }
}

TEST(Tokenizer, DecodeSkipsUnknownIdsAndSpecialTokensOnRequest) {
  const Tokenizer& t = qwen3();
  const std::vector<int32_t> ids = {151644, 9707, -3, 151700, 151645};
  EXPECT_EQ(t.decode(ids), "<|im_start|>Hello<|im_end|>");
  EXPECT_EQ(t.decode(ids, true), "Hello");
  EXPECT_EQ(t.decode(std::vector<int32_t>{}), "");
}

TEST(Tokenizer, PartialUtf8TokensDecodeToReplacementCharacter) {
  const Tokenizer& t = qwen3();
  // U+20000 is rare enough that Qwen3 spells it with byte tokens.
  const std::vector<int32_t> ids = t.encode("\xF0\xA0\x80\x80");
  ASSERT_GT(ids.size(), 1u) << "expected several byte tokens";
  std::string first = t.token_bytes(ids[0]);
  EXPECT_FALSE(td::is_valid_utf8(first));
  // A truncated but otherwise valid sequence is one maximal subpart: one U+FFFD.
  EXPECT_EQ(t.decode(std::span<const int32_t>(ids).first(1)), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode(ids), "\xF0\xA0\x80\x80");
}

TEST(Tokenizer, LossyUtf8FollowsMaximalSubpartRule) {
  auto lossy = [](std::string_view s) {
    std::string out;
    td::append_utf8_lossy(out, s);
    return out;
  };
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(lossy("abc"), "abc");
  EXPECT_EQ(lossy("a\xFF"
                  "b"),
            "a" + r + "b");
  EXPECT_EQ(lossy("\xF0\x9F\x98"), r);          // truncated 4-byte sequence
  EXPECT_EQ(lossy("\xC0\xAF"), r + r);          // overlong lead byte
  EXPECT_EQ(lossy("\xED\xA0\x80"), r + r + r);  // surrogate
  EXPECT_EQ(lossy("\xE2\x82"
                  "A"),
            r + "A");                                   // truncated then ASCII
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_TRUE(td::is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(td::is_valid_utf8("abcdefgh\x80"));
}

TEST(Tokenizer, InvalidUtf8InputIsRepairedBeforeEncoding) {
  const Tokenizer& t = qwen3();
  EXPECT_EQ(t.encode("ab\xFF"
                     "cd"),
            t.encode("ab\xEF\xBF\xBD"
                     "cd"));
}

TEST(Tokenizer, SpecialTokenMatchingCanBeDisabled) {
  const Tokenizer& t = qwen3();
  const std::string text = "<|im_start|>user<think>";
  const std::vector<int32_t> with = t.encode(text);
  ASSERT_EQ(with.front(), 151644);
  const std::vector<int32_t> without = t.encode(text, /*match_special_tokens=*/false);
  EXPECT_EQ(std::count(without.begin(), without.end(), 151644), 0);
  EXPECT_EQ(without.back(), 151667) << "non-special added tokens still match";
  EXPECT_EQ(t.decode(without), text);
}

TEST(Tokenizer, CopiesShareStateAndEncodeConcurrently) {
  const Tokenizer copy = qwen3();
  std::vector<std::thread> threads;
  std::vector<size_t> mismatches(4, 0);
  for (size_t w = 0; w < mismatches.size(); ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = w; i < golden().size(); i += 1) {
          if (copy.encode(golden()[i].text) != golden()[i].ids) ++mismatches[w];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t w = 0; w < mismatches.size(); ++w) EXPECT_EQ(mismatches[w], 0u) << "thread " << w;
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer: the hand-written matchers must agree with a regex engine
// ---------------------------------------------------------------------------------------------

std::vector<td::Span> matches(const td::SplitPattern& p, std::string_view text) {
  std::vector<td::Span> out;
  p.for_each_match(text, [&](td::Span s) { out.push_back(s); });
  return out;
}

std::vector<std::string> pieces(const td::SplitPattern& p, std::string_view text) {
  std::vector<std::string> out;
  for (const td::Span& s : matches(p, text)) out.emplace_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

// Random strings drawn from characters that sit on the pattern's class boundaries.
std::vector<std::string> random_texts(size_t count) {
  const std::vector<char32_t> alphabet = {
      'a',    'Z',    'x',    's',    'S',    't',     'r',     'e',    'v',    'l',     'L',      'm',
      'd',    'D',    '\'',   ' ',    ' ',    ' ',     '\t',    '\n',   '\n',   '\r',    0x0B,     0x0C,
      '0',    '7',    '!',    '.',    ',',    '-',     '_',     '(',    0x85,   0xA0,    0x1680,   0x2000,
      0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,  0x1C,    0x1F,   0x200B, 0x17F,   0xE9,     0x301,
      0x4E2D, 0x3042, 0x0663, 0xBD,   0x2167, 0x1F600, 0x1F3FD, 0x200D, 0xFF11, 0x20000, 0x10FFFD, 0x00};
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<size_t> length(0, 24);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s;
    const size_t n = length(rng);
    for (size_t k = 0; k < n; ++k) td::append_utf8(s, alphabet[pick(rng)]);
    out.push_back(std::move(s));
  }
  return out;
}

TEST(TokenizerPreTokenizer, BuiltinPatternsAgreeWithIcu) {
  const std::vector<std::pair<std::string_view, std::string>> patterns = {
      {td::kQwen2Pattern, "builtin:qwen2"}, {td::kLlama3Pattern, "builtin:llama3"}, {td::kGpt2Pattern, "builtin:gpt2"}};
  std::vector<std::string> texts = random_texts(4000);
  for (const GoldenCase& c : golden()) texts.push_back(c.text);
  for (const auto& [pattern, engine] : patterns) {
    SCOPED_TRACE(engine);
    const auto fast = td::compile_regex(pattern, "test");
    const auto icu = td::compile_regex_icu(pattern, "test");
    ASSERT_EQ(fast->engine(), engine);
    ASSERT_EQ(icu->engine(), "icu");
    size_t failures = 0;
    for (const std::string& text : texts) {
      const auto want = matches(*icu, text);
      const auto got = matches(*fast, text);
      if (got != want && ++failures <= 5) {
        ADD_FAILURE() << show(text) << ": builtin and ICU split differently";
      }
    }
    EXPECT_EQ(failures, 0u);
  }
}

TEST(TokenizerPreTokenizer, WhiteSpaceIsUnicodeWhiteSpace) {
  EXPECT_TRUE(td::is_white_space(0x85));
  EXPECT_TRUE(td::is_white_space(0x0B));
  EXPECT_TRUE(td::is_white_space(0x3000));
  EXPECT_FALSE(td::is_white_space(0xFEFF));
  EXPECT_FALSE(td::is_white_space(0x1C));
  EXPECT_FALSE(td::is_white_space(0x1F));
  EXPECT_FALSE(td::is_white_space(0x200B));
  const auto qwen = td::compile_regex(td::kQwen2Pattern, "test");
  // U+0085 is whitespace, so "!" and it are separate pieces; U+001C is not, so it joins "!".
  EXPECT_EQ(pieces(*qwen, "!\xC2\x85"), (std::vector<std::string>{"!", "\xC2\x85"}));
  EXPECT_EQ(pieces(*qwen, "!\x1C"), (std::vector<std::string>{"!\x1C"}));
}

TEST(TokenizerPreTokenizer, KnownSplits) {
  const auto qwen = td::compile_regex(td::kQwen2Pattern, "test");
  const auto llama = td::compile_regex(td::kLlama3Pattern, "test");
  const auto gpt2 = td::compile_regex(td::kGpt2Pattern, "test");
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(*qwen, "I'M here  12345\n\n  x"),
            (V{"I", "'M", " here", " ", " ", "1", "2", "3", "4", "5", "\n\n", " ", " x"}));
  EXPECT_EQ(pieces(*llama, "12345 abc"), (V{"123", "45", " abc"}));
  EXPECT_EQ(pieces(*gpt2, "I'M here  12345"), (V{"I", "'", "M", " here", " ", " 12345"}));
  EXPECT_EQ(pieces(*qwen, "a  "), (V{"a", "  "}));
  EXPECT_EQ(pieces(*qwen, "\tdef"), (V{"\tdef"}));
}

// ---------------------------------------------------------------------------------------------
// BPE core: the array and heap algorithms against a from-scratch reference
// ---------------------------------------------------------------------------------------------

// Rescans every adjacent pair after each merge: slow but obviously the rule `tokenizers`
// implements (lowest rank first, leftmost among equal ranks).
std::vector<int32_t> reference_merge(const td::MergeTable& merges, std::vector<int32_t> sym) {
  for (;;) {
    size_t best = 0;
    uint64_t best_merge = td::MergeTable::kNone;
    for (size_t k = 0; k + 1 < sym.size(); ++k) {
      const uint64_t m = merges.find(sym[k], sym[k + 1]);
      if ((m >> 32) < (best_merge >> 32)) {
        best = k;
        best_merge = m;
      }
    }
    if (best_merge == td::MergeTable::kNone) return sym;
    sym[best] = static_cast<int32_t>(best_merge & 0xFFFFFFFFu);
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

TEST(TokenizerBpe, ArrayAndHeapMergesMatchReference) {
  std::mt19937 rng(99);
  for (int table = 0; table < 20; ++table) {
    // Random merges over a small alphabet, ranks in random order (not necessarily the
    // "trained" order where a merge's parts are created by earlier merges).
    td::MergeTable merges;
    const int alphabet = 3 + table % 4;
    int32_t next_id = alphabet;
    std::vector<int32_t> known(static_cast<size_t>(alphabet));
    for (int32_t i = 0; i < alphabet; ++i) known[static_cast<size_t>(i)] = i;
    // Ranks are unique, as in a real file (a rank is the merge's index).
    std::vector<uint32_t> ranks(60);
    for (uint32_t i = 0; i < ranks.size(); ++i) ranks[i] = i;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    merges.reserve(ranks.size());
    for (const uint32_t rank : ranks) {
      std::uniform_int_distribution<size_t> pick(0, known.size() - 1);
      const int32_t a = known[pick(rng)], b = known[pick(rng)];
      if (merges.find(a, b) != td::MergeTable::kNone) continue;
      merges.insert(a, b, rank, next_id);
      known.push_back(next_id++);
    }
    for (int word = 0; word < 200; ++word) {
      const size_t n = 1 + rng() % 200;
      std::vector<int32_t> sym(n);
      for (auto& x : sym) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(alphabet));
      const std::vector<int32_t> want = reference_merge(merges, sym);
      std::vector<int32_t> heap = sym;
      td::merge_large(merges, heap);
      ASSERT_EQ(heap, want) << "table " << table << " word " << word << " n " << n;
      if (n <= td::kSmallWord) {
        std::vector<int32_t> small = sym;
        small.resize(td::merge_small(merges, small.data(), small.size()));
        ASSERT_EQ(small, want) << "table " << table << " word " << word << " n " << n;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Synthetic tokenizers for options the golden files do not exercise
// ---------------------------------------------------------------------------------------------

std::string byte_char(unsigned char b) {
  std::string s;
  td::append_utf8(s, td::byte_to_char(b));
  return s;
}

std::string spelled(std::string_view text) {
  std::string s;
  for (const unsigned char b : text) s += byte_char(b);
  return s;
}

// A byte-level BPE where byte b has id b; `extra` adds merges (in rank order) whose results
// get ids from 256 up.
json synthetic(const std::vector<std::pair<std::string, std::string>>& extra, bool pair_format = true) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(static_cast<unsigned char>(b))] = b;
  json merges = json::array();
  int next = 256;
  for (const auto& [a, b] : extra) {
    const std::string l = spelled(a), r = spelled(b);
    if (!vocab.contains(l + r)) vocab[l + r] = next++;
    if (pair_format) {
      merges.push_back(json::array({l, r}));
    } else {
      merges.push_back(l + " " + r);
    }
  }
  return json{{"version", "1.0"},
              {"added_tokens", json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer",
               {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

std::vector<int32_t> bytes_of(std::string_view s) {
  std::vector<int32_t> ids;
  for (const unsigned char b : s) ids.push_back(b);
  return ids;
}

int32_t id_of(const Tokenizer& t, std::string_view text) { return t.token_to_id(spelled(text)).value_or(-1); }

TEST(TokenizerSynthetic, MergeFormatsAndRanks) {
  const std::vector<std::pair<std::string, std::string>> m = {{"a", "b"}, {"b", "c"}, {"ab", "c"}, {" ", "x"}};
  for (const bool pair_format : {true, false}) {
    const Tokenizer t = Tokenizer::from_json_text(synthetic(m, pair_format).dump(), "synthetic");
    // "abc": (a,b) has the lowest rank, then (ab,c).
    EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{id_of(t, "abc")}));
    EXPECT_EQ(t.encode("bc"), (std::vector<int32_t>{id_of(t, "bc")}));
    EXPECT_EQ(t.encode("abd"), (std::vector<int32_t>{id_of(t, "ab"), 'd'}));
    EXPECT_EQ(t.encode("q x"), (std::vector<int32_t>{'q', id_of(t, " x")}));
    // A long word takes the heap path; it must agree with pairwise merging.
    std::string longword;
    std::vector<int32_t> want;
    for (int i = 0; i < 40; ++i) {
      longword += "abc";
      want.push_back(id_of(t, "abc"));
    }
    EXPECT_EQ(t.encode(longword), want);
    EXPECT_EQ(t.decode(t.encode(longword)), longword);
  }
}

TEST(TokenizerSynthetic, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  json j = synthetic({{"h", "i"}});
  j["model"]["vocab"][spelled("hello")] = 900;  // reachable only through ignore_merges
  j["model"]["ignore_merges"] = false;
  const Tokenizer plain = Tokenizer::from_json_text(j.dump(), "synthetic");
  EXPECT_EQ(plain.encode("hello"), bytes_of("hello"));
  j["model"]["ignore_merges"] = true;
  const Tokenizer ignoring = Tokenizer::from_json_text(j.dump(), "synthetic");
  EXPECT_EQ(ignoring.encode("hello"), (std::vector<int32_t>{900}));
  EXPECT_EQ(ignoring.encode("hi"), (std::vector<int32_t>{256}));
  EXPECT_EQ(ignoring.vocab_size(), 901u);
}

TEST(TokenizerSynthetic, ByteLevelPrefixSpaceAndGpt2Regex) {
  json j = synthetic({{" ", "h"}, {" h", "i"}});
  j["pre_tokenizer"]["add_prefix_space"] = true;
  const Tokenizer t = Tokenizer::from_json_text(j.dump(), "synthetic");
  EXPECT_EQ(t.encode("hi"), (std::vector<int32_t>{id_of(t, " hi")}));
  EXPECT_EQ(t.encode("hi hi"), (std::vector<int32_t>{id_of(t, " hi"), id_of(t, " hi")}));
}

TEST(TokenizerSynthetic, AddedTokenOptions) {
  json j = synthetic({{"a", "b"}});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFC"}}})}};
  j["added_tokens"] = json::array({
      {{"id", 1000},
       {"content", "<mask>"},
       {"special", true},
       {"lstrip", true},
       {"rstrip", true},
       {"normalized", false}},
      {{"id", 1001}, {"content", "<w>"}, {"special", false}, {"single_word", true}, {"normalized", false}},
      {{"id", 1002}, {"content", "\xC3\xA9t\xC3\xA9"}, {"special", false}, {"normalized", true}},  // "été"
      {{"id", 1003}, {"content", "<m>"}, {"special", true}, {"normalized", false}},
      {{"id", 1004}, {"content", "<mask>>"}, {"special", true}, {"normalized", false}},
  });
  const Tokenizer t = Tokenizer::from_json_text(j.dump(), "synthetic");
  using V = std::vector<int32_t>;
  // lstrip/rstrip swallow the surrounding whitespace into the token.
  EXPECT_EQ(t.encode("x \t<mask>  y"), (V{'x', 1000, 'y'}));
  // single_word: only when not glued to word characters.
  EXPECT_EQ(t.encode("x <w> y"), (V{'x', ' ', 1001, ' ', 'y'}));
  std::vector<int32_t> glued = bytes_of("x");
  for (const int32_t id : bytes_of("<w>")) glued.push_back(id);
  EXPECT_EQ(t.encode("x<w>"), glued);
  // normalized=true tokens match after NFC: "e" + U+0301 composes to "é".
  EXPECT_EQ(t.encode("e\xCC\x81t\xC3\xA9"), (V{1002}));
  // Leftmost, then longest.
  EXPECT_EQ(t.encode("<mask>>"), (V{1004}));
  EXPECT_EQ(t.encode("<m>ab"), (V{1003, 256}));
  EXPECT_TRUE(t.is_special(1000));
  EXPECT_FALSE(t.is_special(1001));
  EXPECT_EQ(t.decode(V{'x', 1000, 'y'}, true), "xy");
  EXPECT_EQ(t.vocab_size(), 1005u);
}

TEST(TokenizerSynthetic, SplitBehaviors) {
  // Merges make split points observable: "a-" and "-b" only merge inside one piece.
  auto make = [](const std::string& behavior, bool invert) {
    json j = synthetic({{"a", "-"}, {"-", "b"}, {"a", "b"}});
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    return Tokenizer::from_json_text(j.dump(), "synthetic");
  };
  using V = std::vector<int32_t>;
  const Tokenizer isolated = make("Isolated", false);
  EXPECT_EQ(isolated.encode("a-b"), (V{'a', '-', 'b'}));
  const Tokenizer removed = make("Removed", false);
  EXPECT_EQ(removed.encode("a-b"), (V{'a', 'b'}));
  const Tokenizer prev = make("MergedWithPrevious", false);
  EXPECT_EQ(prev.encode("a-b"), (V{id_of(prev, "a-"), 'b'}));
  const Tokenizer next = make("MergedWithNext", false);
  EXPECT_EQ(next.encode("a-b"), (V{'a', id_of(next, "-b")}));
  const Tokenizer contiguous = make("Contiguous", false);
  EXPECT_EQ(contiguous.encode("a--b"), (V{'a', '-', '-', 'b'}));
  // Inverted: the letters are the "matches", removed; the dashes stay.
  const Tokenizer inverted = make("Removed", true);
  EXPECT_EQ(inverted.encode("a-b"), (V{'-'}));
}

// ---------------------------------------------------------------------------------------------
// Malformed and unsupported files
// ---------------------------------------------------------------------------------------------

json tiny_json() { return json::parse(read_file(data_path("models/tiny-llama/tokenizer.json"))); }

// Runs from_json_text and returns the FormatError message ("" if nothing was thrown).
std::string format_error(const std::string& text) {
  try {
    (void)Tokenizer::from_json_text(text, "bad/tokenizer.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

std::string format_error(const json& j) { return format_error(std::string(j.dump())); }

TEST(TokenizerErrors, TruncatedJson) {
  const std::string text = read_file(data_path("models/tiny-llama/tokenizer.json"));
  const std::string msg = format_error(text.substr(0, text.size() / 2));
  EXPECT_NE(msg.find("bad/tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  EXPECT_NE(format_error(std::string()).find("malformed JSON"), std::string::npos);
  EXPECT_NE(format_error(std::string("[1, 2]")).find("top level"), std::string::npos);
}

TEST(TokenizerErrors, MissingFields) {
  json j = tiny_json();
  j["model"].erase("vocab");
  std::string msg = format_error(j);
  EXPECT_NE(msg.find("bad/tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'model.vocab'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;

  j = tiny_json();
  j.erase("model");
  EXPECT_NE(format_error(j).find("'model': missing"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["model"].erase("merges");
  EXPECT_NE(format_error(j).find("'model.merges'"), std::string::npos);

  j = tiny_json();
  j["model"]["vocab"] = json::array();
  EXPECT_NE(format_error(j).find("'model.vocab': expected an object"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["added_tokens"][1].erase("content");
  EXPECT_NE(format_error(j).find("'added_tokens[1].content': missing"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["model"]["vocab"]["a"] = "seven";
  EXPECT_NE(format_error(j).find("model.vocab[\"a\"]"), std::string::npos) << format_error(j);
}

TEST(TokenizerErrors, InconsistentIds) {
  json j = tiny_json();
  j["model"]["vocab"]["zzz_dup"] = 5;
  std::string msg = format_error(j);
  EXPECT_NE(msg.find("token id 5 is given to both"), std::string::npos) << msg;

  j = tiny_json();
  j["model"]["vocab"]["zzz_big"] = int64_t{1} << 40;
  EXPECT_NE(format_error(j).find("out of range"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["added_tokens"][0]["id"] = 7;  // a model.vocab id, with content not in model.vocab
  msg = format_error(j);
  EXPECT_NE(msg.find("'added_tokens[0].id'"), std::string::npos) << msg;
}

TEST(TokenizerErrors, UnsupportedComponents) {
  json j = tiny_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  std::string msg = format_error(j);
  EXPECT_NE(msg.find("'pre_tokenizer.type'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Whitespace"), std::string::npos) << msg;

  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Digits";
  msg = format_error(j);
  EXPECT_NE(msg.find("'pre_tokenizer.pretokenizers[0].type'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Digits"), std::string::npos) << msg;

  j = tiny_json();
  j["normalizer"] = {{"type", "Lowercase"}};
  msg = format_error(j);
  EXPECT_NE(msg.find("'normalizer.type'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Lowercase"), std::string::npos) << msg;

  j = tiny_json();
  j["model"]["type"] = "Unigram";
  msg = format_error(j);
  EXPECT_NE(msg.find("'model.type'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Unigram"), std::string::npos) << msg;

  j = tiny_json();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_NE(format_error(j).find("'decoder.type'"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  msg = format_error(j);
  EXPECT_NE(msg.find("pre_tokenizer.pretokenizers[0].pattern.Regex"), std::string::npos) << msg;

  j = tiny_json();
  j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0];  // Split alone, no ByteLevel
  EXPECT_NE(format_error(j).find("no ByteLevel"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(format_error(j).find("'model.dropout'"), std::string::npos) << format_error(j);
}

TEST(TokenizerErrors, BadMerges) {
  json j = tiny_json();
  j["model"]["merges"][3] = "nosuchtoken x";
  std::string msg = format_error(j);
  EXPECT_NE(msg.find("'model.merges[3]'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nosuchtoken"), std::string::npos) << msg;

  j = tiny_json();
  j["model"]["merges"][0] = "a b c";
  EXPECT_NE(format_error(j).find("'model.merges[0]'"), std::string::npos) << format_error(j);

  j = tiny_json();
  j["model"]["merges"][0] = 42;
  EXPECT_NE(format_error(j).find("'model.merges[0]'"), std::string::npos) << format_error(j);
}

// One id of 2^26 in a tiny file sized the id table at 4.8 GB; the limit is now 2^21 ids.
TEST(TokenizerErrors, HugeTokenIdIsRefusedBeforeSizingTables) {
  json j = tiny_json();
  j["model"]["vocab"]["huge"] = 1 << 26;
  std::string msg = format_error(j);
  EXPECT_NE(msg.find("token id 67108864 is out of range"), std::string::npos) << msg;
  j = tiny_json();
  j["added_tokens"] = json::array({{{"id", 1 << 22}, {"content", "<big>"}, {"special", true}}});
  msg = format_error(j);
  EXPECT_NE(msg.find("added_tokens[0].id"), std::string::npos) << msg;
}

// ICU matching had no time limit: (a+)+$ backtracks exponentially on a run of 'a's followed by 'b'.
TEST(TokenizerErrors, CatastrophicRegexFailsInsteadOfHanging) {
  json j = tiny_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a+)+$";
  const Tokenizer t = Tokenizer::from_json_text(j.dump(), "slow/tokenizer.json");
  try {
    (void)t.encode(std::string(40, 'a') + "b");
    FAIL() << "expected the regex limit";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("slow/tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ran past its limit"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(t.encode("aaa").empty());
}

TEST(TokenizerErrors, DeeplyNestedJsonIsRefused) {
  const std::string msg = format_error("{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  EXPECT_NE(msg.find("nests deeper than 128 levels"), std::string::npos) << msg;
}

TEST(TokenizerErrors, MissingFile) {
  const std::string path = data_path("tokenizer/does_not_exist/tokenizer.json");
  try {
    (void)Tokenizer::from_file(path);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opchain
