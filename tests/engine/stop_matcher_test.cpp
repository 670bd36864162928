#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace opchain {
namespace {

// Feeds pieces until a stop; returns everything emitted (plus the flush when no stop happened).
std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    auto r = m.push(p);
    out += r.emit;
    if (r.stopped) return out;
  }
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  auto r = m.push("hello");
  EXPECT_EQ(r.emit, "hello");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopInsideOnePieceTruncatesBeforeIt) {
  StopMatcher m({"END"});
  auto r = m.push("abcENDxyz");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "abc");
  EXPECT_EQ(m.matched_stop(), 0u);
  EXPECT_EQ(m.push("more").emit, "");
  EXPECT_TRUE(m.push("more").stopped);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopAcrossPiecesHoldsPrefixBack) {
  StopMatcher m({"</s>"});
  auto r = m.push("hi <");
  EXPECT_EQ(r.emit, "hi ");
  EXPECT_FALSE(r.stopped);
  r = m.push("/");
  EXPECT_EQ(r.emit, "");
  r = m.push("s");
  EXPECT_EQ(r.emit, "");
  r = m.push(">tail");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

TEST(StopMatcher, FalsePrefixIsReleased) {
  {
    StopMatcher m({"</s>"});
    EXPECT_EQ(run(m, {"x<", "/t", ">"}), "x</t>");
  }
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("a </").emit, "a ");
  EXPECT_EQ(m.push("b>").emit, "</b>");
  EXPECT_EQ(m.push("<").emit, "");
  EXPECT_EQ(m.flush(), "<");  // end of generation: held text is real output
}

TEST(StopMatcher, HeldTextRestartsInsideItself) {
  // "aab" with stop "ab": after "a","a" the first 'a' can be released but the second must be held.
  StopMatcher m({"ab"});
  EXPECT_EQ(m.push("a").emit, "");
  EXPECT_EQ(m.push("a").emit, "a");
  auto r = m.push("b");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

TEST(StopMatcher, EarliestStopWinsAcrossSeveralStrings) {
  StopMatcher m({"world", "lo w"});
  auto r = m.push("hello world");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "hel");
  EXPECT_EQ(m.matched_stop(), 1u);
}

TEST(StopMatcher, ShorterStopCompletesFirstEvenIfLongerStartedEarlier) {
  // "abcd" is in progress when "c" appears: generation stops at "c".
  StopMatcher m({"abcd", "c"});
  EXPECT_EQ(m.push("xab").emit, "x");
  auto r = m.push("c");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "ab");
  EXPECT_EQ(m.matched_stop(), 1u);
}

TEST(StopMatcher, EmptyStopStringsAreIgnoredAndIndicesKept) {
  StopMatcher m({"", "x"});
  EXPECT_EQ(m.stops().size(), 1u);
  EXPECT_EQ(m.max_held(), 0u);
  auto r = m.push("abx");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "ab");
  EXPECT_EQ(m.matched_stop(), 1u);  // index into the list as given
}

TEST(StopMatcher, MultiByteStopKeepsCharactersWhole) {
  StopMatcher m({"\xE3\x80\x82\xE3\x80\x82"});  // "。。"
  EXPECT_EQ(m.push("\xE4\xB8\xAD\xE3\x80\x82").emit, "\xE4\xB8\xAD");
  auto r = m.push("\xE3\x80\x82");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

// Property: however the text is cut into pieces, the emitted text equals the text before the
// earliest stop (or the whole text), and nothing is held back longer than max_held().
TEST(StopMatcher, SplitInvarianceAgainstOneShot) {
  const std::vector<std::string> stops = {"ab", "bca", "cc", "abcab"};
  std::mt19937 rng(99);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const size_t len = rng() % 24;
    for (size_t i = 0; i < len; ++i) text.push_back("abcd"[rng() % 4]);
    size_t cut = std::string::npos;
    for (const auto& s : stops) cut = std::min(cut, text.find(s));
    const std::string want = cut == std::string::npos ? text : text.substr(0, cut);

    StopMatcher m(stops);
    std::string got;
    size_t fed = 0;
    bool stopped = false;
    for (size_t pos = 0; pos < text.size() && !stopped;) {
      const size_t n = std::min<size_t>(1 + rng() % 5, text.size() - pos);
      auto r = m.push(std::string_view(text).substr(pos, n));
      got += r.emit;
      stopped = r.stopped;
      pos += n;
      fed = pos;
      if (!stopped) {
        ASSERT_LE(fed - got.size(), m.max_held()) << "trial " << trial;
      }
    }
    if (!stopped) got += m.flush();
    ASSERT_EQ(got, want) << "trial " << trial << " text " << text;
    ASSERT_EQ(stopped, cut != std::string::npos) << "trial " << trial << " text " << text;
  }
}

}  // namespace
}  // namespace opchain
