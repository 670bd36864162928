#pragma once
// JSON from outside (model files, a conversation handed to the CLI or the server) parsed within
// explicit limits, with errors that name where it came from.
//
// Note [JSON nesting]: nlohmann's parser is iterative, but dump(), copies and comparisons recurse once
// per level, so a file of a few MB of '[' overflowed the stack as soon as an error message dumped a
// field or a caller copied the value. Model files nest a handful of levels (tokenizer.json: 6) and
// chat requests a dozen; kMaxJsonNesting refuses anything deeper before it is parsed or copied.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace opchain {

constexpr int kMaxJsonNesting = 128;

// Throws FormatError "<source> nests deeper than 128 levels" (a scan of the text, no parse).
void check_json_nesting(std::string_view text, const std::string& source);

// Parses `text` after check_json_nesting; FormatError "<source> is not valid JSON: ..." otherwise.
nlohmann::json parse_json_input(std::string_view text, const std::string& source);

// Reads the whole file (FormatError when it cannot be read) and parses it like parse_json_input.
nlohmann::json read_json_file(const std::string& path);

// True when a value already in memory nests deeper than `limit` (counted without recursion, so it is
// safe on any value; a caller checks before copying or dumping it).
bool json_nests_deeper_than(const nlohmann::json& v, int limit);
bool json_nests_deeper_than(const nlohmann::ordered_json& v, int limit);

// A value as an error message shows it: dumped (invalid UTF-8 replaced) and cut at 120 bytes.
std::string json_excerpt(const nlohmann::json& v);
std::string json_excerpt(const nlohmann::ordered_json& v);

}  // namespace opchain
