#include "engine/detokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace opchain {
namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// A fake vocabulary: token id i decodes to vocab[i]; ids listed in specials are special.
struct FakeVocab {
  std::vector<std::string> vocab;
  std::vector<int32_t> specials;
  IncrementalDetokenizer make(bool skip_special) const {
    return IncrementalDetokenizer(
        [this](int32_t id) { return vocab.at(static_cast<size_t>(id)); },
        [this](int32_t id) { return std::find(specials.begin(), specials.end(), id) != specials.end(); }, skip_special);
  }
};

// Pushes every id, checking each piece is valid UTF-8 on its own, and returns the concatenation.
std::string stream(IncrementalDetokenizer& d, const std::vector<int32_t>& ids,
                   std::vector<std::string>* pieces = nullptr) {
  std::string all;
  for (int32_t id : ids) {
    std::string piece = d.push(id);
    EXPECT_EQ(utf8_replace_invalid(piece), piece) << "push emitted invalid or partial UTF-8";
    if (pieces) pieces->push_back(piece);
    all += piece;
  }
  std::string tail = d.flush();
  if (pieces) pieces->push_back(tail);
  return all + tail;
}

TEST(Utf8ReplaceInvalid, MatchesPythonErrorsReplace) {
  // Expected values from Python: bytes.decode('utf-8', 'replace').
  EXPECT_EQ(utf8_replace_invalid("plain ascii"), "plain ascii");
  EXPECT_EQ(utf8_replace_invalid("\xE2\x82\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(utf8_replace_invalid("\xE0\x80"), kFFFD + kFFFD);  // overlong: E0 needs A0..BF
  EXPECT_EQ(utf8_replace_invalid("\xF0\x9F\x98"), kFFFD);      // truncated emoji: one U+FFFD
  EXPECT_EQ(utf8_replace_invalid("\xF0\x9F\x98"
                                 "A"),
            kFFFD + "A");
  EXPECT_EQ(utf8_replace_invalid("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // surrogate
  EXPECT_EQ(utf8_replace_invalid("\xC0\xAF"), kFFFD + kFFFD);
  EXPECT_EQ(utf8_replace_invalid("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // > U+10FFFF
  EXPECT_EQ(utf8_replace_invalid("\xFF"), kFFFD);
  EXPECT_EQ(utf8_replace_invalid("a\x80"
                                 "b"),
            "a" + kFFFD + "b");
  EXPECT_EQ(utf8_replace_invalid("\xE4\xB8\xE4\xB8\xAD"), kFFFD + "\xE4\xB8\xAD");
  EXPECT_EQ(utf8_replace_invalid("\xC3("), kFFFD + "(");
}

TEST(Utf8ReplaceInvalid, MatchesPythonOnMixedCases) {
  const std::pair<const char*, const char*> cases[] = {
      {"e4a0ef98808fb89fedad80ffc2808ff0f08fc08f",
       "efbfbdef9880efbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdc280efbfbdefbfbdefbfbdefbfbdefbfbdefbfbd"},
      {"a0b89fade0b880bf9fadad98c2ed9fb88fad809f",
       "efbfbdefbfbdefbfbdefbfbde0b880efbfbdefbfbdefbfbdefbfbdefbfbdefbfbded9fb8efbfbdefbfbdefbfbdefbfbd"},
      {"dfa0f0b8dff0ed80efc0a08fbfa0c080c041f5ad",
       "dfa0efbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbd41efbfbdefbfbd"},
      {"bfdfe041a0f0b8ed9fade4a0ff9f988080f480b8",
       "efbfbdefbfbdefbfbd41efbfbdefbfbded9fadefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbd"},
      {"efefefef9ff598ef80c28fc2f4bf9fe49f809f41",
       "efbfbdefbfbdefbfbdefbfbdefbfbdefbfbdefbfbdc28fefbfbdefbfbdefbfbdefbfbde49f80efbfbd41"},
      {"e282acf490e282acffe282ace282ac80c3a920e282ac", "e282acefbfbdefbfbde282acefbfbde282ace282acefbfbdc3a920e282ac"},
      {"f09fe282ace282ace282ac61c3a9f09f9880e282aceda0e4b8ad",
       "efbfbde282ace282ace282ac61c3a9f09f9880e282acefbfbdefbfbde4b8ad"},
      {"80612061c3a9e4b8e4b8adf09f98808020", "efbfbd612061c3a9efbfbde4b8adf09f9880efbfbd20"},
      {"f09f9880eda061c3a9e4b8ade282ace4b8ad61e282ac61", "f09f9880efbfbdefbfbd61c3a9e4b8ade282ace4b8ad61e282ac61"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(utf8_replace_invalid(from_hex(in)), from_hex(want)) << in;
}

TEST(IncrementalDetokenizer, EmojiSplitIntoFourByteTokens) {
  // U+1F600 is F0 9F 98 80; each byte is its own token, as byte-level BPE does for rare emoji.
  FakeVocab v{{"Hi ", "\xF0", "\x9F", "\x98", "\x80", "!"}, {}};
  auto d = v.make(false);
  EXPECT_EQ(d.push(0), "Hi ");
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(2), "");
  EXPECT_EQ(d.push(3), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(d.push(4), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(5), "!");
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDetokenizer, CjkSplitAcrossTokenBoundaries) {
  // "中文" = E4 B8 AD E6 96 87, cut unevenly: [E4] [B8 AD E6] [96 87].
  FakeVocab v{{"\xE4", "\xB8\xAD\xE6", "\x96\x87"}, {}};
  auto d = v.make(false);
  EXPECT_EQ(d.push(0), "");
  EXPECT_EQ(d.push(1), "\xE4\xB8\xAD");
  EXPECT_EQ(d.push(2), "\xE6\x96\x87");
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDetokenizer, InvalidBytesBecomeReplacementAsSoonAsKnown) {
  FakeVocab v{{"\xF0\x9F", "A", "\xFF", "\xE4\xB8"}, {}};
  auto d = v.make(false);
  EXPECT_EQ(d.push(0), "");           // could still be an emoji
  EXPECT_EQ(d.push(1), kFFFD + "A");  // 'A' cannot continue it: the prefix is replaced
  EXPECT_EQ(d.push(2), kFFFD);        // never valid: replaced at once
  EXPECT_EQ(d.push(3), "");
  EXPECT_EQ(d.flush(), kFFFD);  // truncated at the end of the stream
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDetokenizer, SpecialTokensSkippedOrKept) {
  FakeVocab v{{"<|im_end|>", "a", "\xC3", "\xA9"}, {0}};
  {
    auto d = v.make(true);
    // Skipped specials vanish and the bytes around them join, as in a one-shot decode.
    EXPECT_EQ(stream(d, {1, 0, 2, 0, 3}), "a\xC3\xA9");
  }
  {
    auto d = v.make(false);
    EXPECT_EQ(stream(d, {1, 0, 3}), "a<|im_end|>" + kFFFD);
  }
}

TEST(IncrementalDetokenizer, RejectsEmptyFunctions) {
  EXPECT_THROW(IncrementalDetokenizer(
                   nullptr, [](int32_t) { return false; }, false),
               InvalidArgumentError);
  EXPECT_THROW(IncrementalDetokenizer([](int32_t) { return std::string(); }, nullptr, false), InvalidArgumentError);
}

// Property: for random byte soup cut into random tokens, every piece is whole UTF-8 and the
// concatenation equals the one-shot decode.
TEST(IncrementalDetokenizer, ConcatenationEqualsOneShotDecode) {
  std::mt19937 rng(1234);
  const std::vector<std::string> atoms = {
      "a",    " ",    "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xE2\x82\xAC",
      "\x80", "\xFF", "\xC0",     "\xE0\x80",     "\xED\xA0\x80",     "\xF4\x90"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes;
    const int natoms = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < natoms; ++i) bytes += atoms[rng() % atoms.size()];
    FakeVocab v;
    std::vector<int32_t> ids;
    for (size_t pos = 0; pos < bytes.size();) {
      const size_t len = std::min<size_t>(1 + rng() % 4, bytes.size() - pos);
      v.vocab.push_back(bytes.substr(pos, len));
      ids.push_back(static_cast<int32_t>(ids.size()));
      pos += len;
    }
    auto d = v.make(false);
    ASSERT_EQ(stream(d, ids), utf8_replace_invalid(bytes)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace opchain
