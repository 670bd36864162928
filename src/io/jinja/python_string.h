#pragma once
// Python's str methods as Jinja2 templates call them (split, strip, replace, title, ...), on
// UTF-8 bytes. Only ASCII letters change case, as the chat templates in use need no more.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opchain::jinja::detail {

// Python's str.isspace() for the ASCII range plus the separators str.split() honours.
bool is_py_space(char c);

char ascii_upper(char c);
char ascii_lower(char c);
bool ascii_alpha(char c);
bool ascii_digit(char c);

std::string to_upper(std::string s);
std::string to_lower(std::string s);

// Python str.capitalize(): first character upper-cased, the rest lower-cased.
std::string py_capitalize(const std::string& s);

// Python str.title(): a letter is upper-cased when it follows a non-letter, lower-cased otherwise.
std::string py_title(const std::string& s);

// Python str.strip(chars) family. chars == nullopt strips whitespace; otherwise any of the
// given code points.
std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);

// Python str.split / str.rsplit.
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                                  bool from_right, int line);

// Python str.replace(old, new, count).
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, std::int64_t count,
                       int line);

// Python str.splitlines() without keepends.
std::vector<std::string> py_splitlines(const std::string& s);

// Python str.islower()/isupper(): at least one cased character and none of the other case.
bool ascii_case_test(const std::string& s, bool want_lower);

}  // namespace opchain::jinja::detail
