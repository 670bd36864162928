#include "engine/integer_range_grammar.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace opchain {

namespace {

using Seq = Grammar::Sequence;

class RangeBuilder {
 public:
  RangeBuilder(Grammar& g, int max_digits) : g_(g), max_digits_(max_digits) {}

  // Same-length digit strings between lo and hi (lo <= hi).
  Seq fixed(const std::string& lo, const std::string& hi) {
    const size_t n = lo.size();
    if (n == 0) return {};
    if (lo.find_first_not_of('0', 1) == std::string::npos && hi.find_first_not_of('9', 1) == std::string::npos)
      return with_free_digits(digit(lo[0], hi[0]), n - 1);
    if (lo[0] == hi[0]) return cat(Seq{digit(lo[0], lo[0])}, fixed(lo.substr(1), hi.substr(1)));
    std::vector<Seq> alts;
    alts.push_back(cat(Seq{digit(lo[0], lo[0])}, fixed(lo.substr(1), std::string(n - 1, '9'))));
    if (lo[0] + 1 <= hi[0] - 1)
      alts.push_back(with_free_digits(digit(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)), n - 1));
    alts.push_back(cat(Seq{digit(hi[0], hi[0])}, fixed(std::string(n - 1, '0'), hi.substr(1))));
    return {g_.add_rule("int_range", std::move(alts))};
  }

  // Non-negative integers from a to b (b absent: up to max_digits digits), one alternative per length.
  void non_negative(int64_t a, std::optional<int64_t> b, std::vector<Seq>& alts) {
    const std::string sa = std::to_string(a);
    const size_t la = sa.size(), lb = b ? std::to_string(*b).size() : static_cast<size_t>(max_digits_);
    for (size_t len = la; len <= lb; ++len) {
      const std::string lo = len == la ? sa : "1" + std::string(len - 1, '0');
      const std::string hi = b && len == lb ? std::to_string(*b) : std::string(len, '9');
      alts.push_back(fixed(lo, hi));
    }
  }

 private:
  static Seq cat(Seq a, const Seq& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  Grammar::Symbol digit(char lo, char hi) {
    return g_.terminal(byte_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)));
  }
  Seq with_free_digits(Grammar::Symbol first, size_t n) {
    Seq s{first};
    for (size_t i = 0; i < n; ++i) s.push_back(digit('0', '9'));
    return s;
  }

  Grammar& g_;
  int max_digits_;
};

}  // namespace

int32_t add_integer_range_rule(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits) {
  if (lo && hi && *lo > *hi) throw InvalidArgumentError("integer range: the lower bound is above the upper bound");
  RangeBuilder b(g, max_digits);
  std::vector<Grammar::Sequence> alts;
  if (!hi || *hi >= 0) b.non_negative(lo ? std::max<int64_t>(*lo, 0) : 0, hi, alts);
  if (!lo || *lo < 0) {
    std::vector<Grammar::Sequence> neg;
    b.non_negative(hi && *hi < 0 ? -*hi : 1, lo ? std::optional<int64_t>(-*lo) : std::nullopt, neg);
    for (auto& seq : neg) {
      seq.insert(seq.begin(), g.terminal(byte_set('-')));
      alts.push_back(std::move(seq));
    }
  }
  return g.add_rule("integer_range", std::move(alts));
}

}  // namespace opchain
