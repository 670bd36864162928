#include "io/jinja/access.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/jinja/arguments.h"
#include "io/jinja/errors.h"
#include "io/jinja/repr.h"
#include "io/utf8.h"

namespace opchain::jinja::detail {

Value get_attr(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) fail_undefined(obj, line);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.as<NamespacePtr>()->attrs.find(name)) return *v;
  }
  // jinja2 returns Undefined for a missing attribute of a defined object; only using it fails.
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

namespace {

// Python index normalisation; nullopt when out of range.
std::optional<std::size_t> normalize_index(std::int64_t index, std::size_t size) {
  const auto n = static_cast<std::int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<std::size_t>(index);
}

}  // namespace

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) fail_undefined(obj, line);
  if (obj.is_dict() || obj.is_namespace()) {
    if (key.is_string()) return get_attr(obj, key.str(), line);
    return Value::undefined("'" + type_name(obj) + " object' has no element " + to_repr(key));
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    const std::int64_t index = as_int(key, "index", line);
    if (obj.is_list()) {
      if (auto i = normalize_index(index, obj.items().size())) return obj.items()[*i];
    } else {
      const auto offsets = utf8_offsets(obj.str());
      if (auto i = normalize_index(index, offsets.size() - 1)) {
        return Value::string(obj.str().substr(offsets[*i], offsets[*i + 1] - offsets[*i]));
      }
    }
    return Value::undefined("'" + type_name(obj) + " object' has no element " + std::to_string(index));
  }
  if (key.is_string()) return get_attr(obj, key.str(), line);
  return Value::undefined("'" + type_name(obj) + " object' has no element " + to_repr(key));
}

// Python slice.indices() followed by the index walk.
std::vector<std::size_t> slice_positions(std::size_t size, const Value& start_v, const Value& stop_v,
                                         const Value& step_v, int line) {
  auto opt_int = [&](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    return as_int(v, "slice", line);
  };
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t step = opt_int(step_v).value_or(1);
  if (step == 0) fail_render(line, "slice step cannot be zero");
  auto clamp = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const std::int64_t start = clamp(opt_int(start_v), step < 0 ? n - 1 : 0);
  const std::int64_t stop = clamp(opt_int(stop_v), step < 0 ? -1 : n);
  std::vector<std::size_t> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

// What `for x in v` iterates over.
ListPtr iterate(const Value& v, int line) {
  if (v.is_list()) return v.as<ListPtr>();
  List items;
  if (v.is_undefined()) return std::make_shared<const List>();
  if (v.is_dict()) {
    for (const auto& entry : v.dict().entries) items.push_back(Value::string(entry.first));
  } else if (v.is_string()) {
    for (auto& ch : utf8_chars(v.str())) items.push_back(Value::string(std::move(ch)));
  } else {
    fail_render(line, "'" + type_name(v) + "' object is not iterable");
  }
  return std::make_shared<const List>(std::move(items));
}

bool contains(const Value& container, const Value& item, int line) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (!item.is_string()) {
      fail_render(line, "'in <string>' requires string as left operand, not " + type_name(item));
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const auto& x : container.items()) {
      if (equal(x, item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return item.is_string() && container.dict().find(item.str()) != nullptr;
  fail_render(line, "argument of type '" + type_name(container) + "' is not iterable");
}

Value dict_items(const Dict& d) {
  List items;
  items.reserve(d.entries.size());
  for (const auto& [k, v] : d.entries) items.push_back(Value::tuple(List{Value::string(k), v}));
  return Value::list(std::move(items));
}

}  // namespace opchain::jinja::detail
