#pragma once
// Reading values: attributes, items, slices, iteration and `in`, with Jinja2's rules for what
// is Undefined and what fails.
#include <cstddef>
#include <string>
#include <vector>

#include "io/jinja/value.h"

namespace opchain::jinja::detail {

// obj.name; a missing attribute of a defined object is Undefined, as in jinja2.
Value get_attr(const Value& obj, const std::string& name, int line);

// obj[key]: list/str index (code points for str), dict key, or attribute.
Value get_item(const Value& obj, const Value& key, int line);

// Python slice.indices() followed by the index walk.
std::vector<std::size_t> slice_positions(std::size_t size, const Value& start_v, const Value& stop_v,
                                         const Value& step_v, int line);

// What `for x in v` iterates over.
ListPtr iterate(const Value& v, int line);

// Python `item in container`.
bool contains(const Value& container, const Value& item, int line);

// dict.items() as a list of (key, value) tuples.
Value dict_items(const Dict& d);

}  // namespace opchain::jinja::detail
