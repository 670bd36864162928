#pragma once
// JSON Schema integer bounds -> grammar: the decimal spellings (no leading zeros, no "-0") of the
// integers in [lo, hi], built digit position by digit position as the classic numeric-range regex
// (per length: the prefix equal to a bound, then free digits). An absent bound is open up to
// max_digits digits.
#include <cstdint>
#include <optional>

#include "engine/grammar.h"

namespace opchain {

// Requires lo <= hi when both are given and |bounds| < 10^max_digits, max_digits <= 18.
int32_t add_integer_range_rule(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits);

}  // namespace opchain
