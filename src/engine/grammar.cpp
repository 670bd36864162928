#include "engine/grammar.h"

#include <algorithm>

#include "core/error.h"

namespace opchain {

ByteSet byte_set(uint8_t b) {
  ByteSet s;
  s.set(b);
  return s;
}

ByteSet byte_range(uint8_t lo, uint8_t hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(static_cast<size_t>(b));
  return s;
}

ByteSet byte_set_of(std::string_view chars) {
  ByteSet s;
  for (char c : chars) s.set(static_cast<uint8_t>(c));
  return s;
}

int32_t Grammar::add_rule(std::string name) {
  rules_.push_back(Rule{std::move(name), {}});
  return static_cast<int32_t>(rules_.size() - 1);
}

void Grammar::add_alternative(int32_t rule, Sequence symbols) {
  rules_.at(static_cast<size_t>(rule)).alternatives.push_back(std::move(symbols));
}

int32_t Grammar::add_rule(std::string name, std::vector<Sequence> alternatives) {
  const int32_t r = add_rule(std::move(name));
  rules_[static_cast<size_t>(r)].alternatives = std::move(alternatives);
  return r;
}

Grammar::Symbol Grammar::terminal(const ByteSet& bytes) {
  auto it = std::find(terminals_.begin(), terminals_.end(), bytes);
  if (it == terminals_.end()) it = terminals_.insert(terminals_.end(), bytes);
  return -static_cast<Symbol>(it - terminals_.begin()) - 1;
}

Grammar::Sequence Grammar::literal(std::string_view bytes) {
  Sequence s;
  for (char c : bytes) s.push_back(terminal(byte_set(static_cast<uint8_t>(c))));
  return s;
}

void Grammar::validate() const {
  if (root_ < 0 || static_cast<size_t>(root_) >= rules_.size()) throw InvalidArgumentError("grammar: no root rule");
  for (const Rule& r : rules_) {
    if (r.alternatives.empty()) throw InvalidArgumentError("grammar: rule '" + r.name + "' has no alternatives");
    for (const Sequence& seq : r.alternatives)
      for (Symbol s : seq) {
        if (is_rule(s) && static_cast<size_t>(s) >= rules_.size())
          throw InvalidArgumentError("grammar: rule '" + r.name + "' refers to rule " + std::to_string(s) +
                                     ", which does not exist");
        if (!is_rule(s) && (static_cast<size_t>(-(s + 1)) >= terminals_.size() || terminal_bytes(s).none()))
          throw InvalidArgumentError("grammar: rule '" + r.name + "' has an empty or unknown terminal");
      }
  }
}

int32_t add_repeat_rule(Grammar& g, const std::string& name, const Grammar::Sequence& item,
                        const Grammar::Sequence& sep, int64_t min, int64_t max) {
  auto cat = [](std::initializer_list<Grammar::Sequence> parts) {
    Grammar::Sequence out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  if (max == 0) return g.add_rule(name, {{}});
  const int64_t first_required = std::max<int64_t>(min, 1);
  int32_t tail;  // after the required items: the optional ones
  if (max < 0) {
    tail = g.add_rule(name + "_more");
    g.add_alternative(tail, {});
    g.add_alternative(tail, cat({sep, item, {tail}}));
  } else {
    tail = g.add_rule(name + "_end", {{}});
    for (int64_t k = 0; k < max - first_required; ++k) tail = g.add_rule(name + "_opt", {{}, cat({sep, item, {tail}})});
  }
  int32_t chain = tail;
  for (int64_t j = 1; j < first_required; ++j) chain = g.add_rule(name + "_req", {cat({sep, item, {chain}})});
  const int32_t nonempty = g.add_rule(name + "_items", {cat({item, {chain}})});
  return min == 0 ? g.add_rule(name, {{}, {nonempty}}) : nonempty;
}

std::vector<Grammar::Sequence> utf8_multibyte_sequences(Grammar& g) {
  const auto t = [&](uint8_t lo, uint8_t hi) { return g.terminal(byte_range(lo, hi)); };
  const auto cont = t(0x80, 0xBF);
  return {
      {t(0xC2, 0xDF), cont},
      {t(0xE0, 0xE0), t(0xA0, 0xBF), cont},
      {g.terminal(byte_range(0xE1, 0xEC) | byte_range(0xEE, 0xEF)), cont, cont},
      {t(0xED, 0xED), t(0x80, 0x9F), cont},
      {t(0xF0, 0xF0), t(0x90, 0xBF), cont, cont},
      {t(0xF1, 0xF3), cont, cont, cont},
      {t(0xF4, 0xF4), t(0x80, 0x8F), cont, cont},
  };
}

namespace {

std::string describe(const ByteSet& set) {
  auto show = [](int b) {
    if (b >= 0x21 && b < 0x7f && b != '\\' && b != ']' && b != '-') return std::string(1, static_cast<char>(b));
    static const char* hex = "0123456789abcdef";
    return std::string("\\x") + hex[b >> 4] + hex[b & 15];
  };
  if (set.count() == 1)
    for (int b = 0; b < 256; ++b)
      if (set.test(static_cast<size_t>(b))) return "'" + show(b) + "'";
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(static_cast<size_t>(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && set.test(static_cast<size_t>(e + 1))) ++e;
    out += show(b);
    if (e > b) out += "-" + show(e);
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (size_t i = 0; i < rules_.size(); ++i) {
    out += rules_[i].name + (static_cast<int32_t>(i) == root_ ? " (root)" : "") + " ::=";
    for (size_t a = 0; a < rules_[i].alternatives.size(); ++a) {
      out += a == 0 ? " " : " | ";
      if (rules_[i].alternatives[a].empty()) out += "\"\"";
      for (size_t k = 0; k < rules_[i].alternatives[a].size(); ++k) {
        const Symbol s = rules_[i].alternatives[a][k];
        if (k) out += " ";
        out += is_rule(s) ? rules_[static_cast<size_t>(s)].name : describe(terminal_bytes(s));
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace opchain
