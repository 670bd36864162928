#pragma once
// JSON Schema "pattern" -> grammar: a rule matching the JSON-encoded text (what appears between the
// quotes) of strings that fully match the regular expression. A full match also satisfies JSON
// Schema's unanchored search, so "^" at the start and "$" at the end change nothing.
//
// Supported: literals (UTF-8 included), ".", classes "[a-z_]" / "[^...]", escapes \d \w \s \D \W \S
// \n \t \r \f \v and escaped punctuation, groups "(...)" and "(?:...)", "|", quantifiers ? * + {n}
// {n,} {n,m} (a trailing lazy "?" is accepted and changes nothing). Classes generate ASCII members
// plus the non-ASCII literals they list; "." and plain negated classes add every non-ASCII
// character, but \D \W \S and negated classes holding \d \w \s or non-ASCII literals stay ASCII,
// since Python's re (which the validator uses) reads \d, \w, \s as Unicode classes.
// Anything else (backreferences, lookaround, \b, inline flags, named groups, ranges over non-ASCII)
// throws InvalidArgumentError naming the construct and its offset.
#include <cstdint>
#include <string_view>

#include "engine/grammar.h"

namespace opchain {

int32_t add_json_string_pattern_rule(Grammar& g, std::string_view pattern);

}  // namespace opchain
