#include "engine/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/error.h"
#include "engine/integer_range_grammar.h"
#include "engine/regex_grammar.h"

namespace opchain {

namespace {

using Json = nlohmann::ordered_json;
using Seq = Grammar::Sequence;

[[noreturn]] void fail(const std::string& what, const std::string& pointer) {
  throw InvalidArgumentError("json_schema: " + what + " at " +
                             (pointer.empty() ? std::string("/ (the root)") : pointer));
}

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// Keywords that only annotate. "format" is one too: JSON Schema 2020-12 makes it an annotation by
// default, and the jsonschema validator does not check it unless asked.
const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> k{"title",   "description", "$schema",     "$id",       "$comment",
                                       "default", "examples",    "readOnly",    "writeOnly", "deprecated",
                                       "format",  "$defs",       "definitions", "strict"};
  return k;
}

const std::set<std::string>& supported_keywords() {
  static const std::set<std::string> k{"type",
                                       "properties",
                                       "required",
                                       "additionalProperties",
                                       "items",
                                       "minItems",
                                       "maxItems",
                                       "enum",
                                       "const",
                                       "anyOf",
                                       "oneOf",
                                       "$ref",
                                       "minLength",
                                       "maxLength",
                                       "pattern",
                                       "minimum",
                                       "maximum",
                                       "exclusiveMinimum",
                                       "exclusiveMaximum"};
  return k;
}

class Compiler {
 public:
  Compiler(Grammar& g, const Json& root, const JsonGrammarOptions& o) : g_(g), root_(root), o_(o) {
    if (o.max_whitespace < 0 || o.max_integer_digits < 1 || o.max_integer_digits > 18 || o.max_fraction_digits < 1 ||
        o.max_exponent_digits < 1)
      throw InvalidArgumentError("json_schema: whitespace and digit bounds must be positive");
    ws_ = repeat("ws", {g_.terminal(byte_set_of(" \t\n\r"))}, {}, 0, o.max_whitespace);
  }

  int32_t compile(const Json& s, const std::string& ptr) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("the schema 'false' matches nothing", ptr);
      return any_value();
    }
    if (!s.is_object()) fail(std::string("a schema must be an object or a boolean, got ") + s.type_name(), ptr);
    for (const auto& [key, value] : s.items())
      if (!annotation_keywords().count(key) && !supported_keywords().count(key))
        fail("unsupported keyword '" + key + "'", ptr + "/" + escape_pointer_token(key));
    if (s.contains("$ref")) return ref(s["$ref"], ptr + "/$ref");
    if (s.contains("const")) return add("const", {literal_json(s["const"])});
    if (s.contains("enum")) return enumeration(s["enum"], ptr + "/enum");
    for (const char* k : {"anyOf", "oneOf"})
      if (s.contains(k)) return any_of(s[k], ptr + "/" + k);
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) return typed(s, t.get<std::string>(), ptr);
      if (!t.is_array() || t.empty()) fail("'type' must be a type name or a non-empty array of them", ptr + "/type");
      std::vector<Seq> alts;
      for (size_t i = 0; i < t.size(); ++i) {
        if (!t[i].is_string()) fail("'type' entries must be strings", ptr + "/type/" + std::to_string(i));
        alts.push_back({typed(s, t[i].get<std::string>(), ptr)});
      }
      return add("types", alts);
    }
    // No "type": inferred from the keywords present, as xgrammar does.
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
      return typed(s, "object", ptr);
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed(s, "array", ptr);
    if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern")) return typed(s, "string", ptr);
    for (const char* k : kBoundKeywords)
      if (s.contains(k)) fail(std::string("'") + k + "' needs \"type\": \"integer\"", ptr + "/" + k);
    return any_value();
  }

  int32_t any_object() {
    if (any_object_ < 0) {
      any_object_ = g_.add_rule("object");
      const int32_t member = add("member", {cat({{string_rule(0, -1)}, {ws_}, lit(":"), {ws_}, {any_value()}})});
      const int32_t members = repeat("members", {member}, cat({{ws_}, lit(","), {ws_}}), 1, -1);
      g_.add_alternative(any_object_, cat({lit("{"), {ws_}, lit("}")}));
      g_.add_alternative(any_object_, cat({lit("{"), {ws_}, {members}, {ws_}, lit("}")}));
    }
    return any_object_;
  }

 private:
  int32_t add(const std::string& name, std::vector<Seq> alts) { return g_.add_rule(name, std::move(alts)); }
  Seq lit(std::string_view s) { return g_.literal(s); }
  static Seq cat(std::initializer_list<Seq> parts) {
    Seq out;
    for (const Seq& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  Seq literal_json(const Json& v) { return lit(v.dump(-1, ' ', false)); }

  int32_t repeat(const std::string& name, const Seq& item, const Seq& sep, int64_t min, int64_t max) {
    return add_repeat_rule(g_, name, item, sep, min, max);
  }

  int64_t count_keyword(const Json& s, const char* key, const std::string& ptr, int64_t fallback) {
    if (!s.contains(key)) return fallback;
    const Json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(std::string("'") + key + "' must be a non-negative integer", ptr + "/" + key);
    constexpr int64_t kMaxCount = 10000;  // each bound expands into rules; past this the grammar is not worth building
    if (v.get<int64_t>() > kMaxCount)
      fail(std::string("'") + key + "' above " + std::to_string(kMaxCount) + " is not supported", ptr + "/" + key);
    return v.get<int64_t>();
  }

  int32_t typed(const Json& s, const std::string& type, const std::string& ptr) {
    if (type == "object") return object(s, ptr);
    if (type == "array") return array(s, ptr);
    if (type == "string") {
      if (s.contains("pattern")) return pattern(s, ptr);
      const int64_t min = count_keyword(s, "minLength", ptr, 0), max = count_keyword(s, "maxLength", ptr, -1);
      if (max >= 0 && max < min) fail("'maxLength' is below 'minLength'", ptr + "/maxLength");
      return string_rule(min, max);
    }
    if (type == "number") {
      for (const char* k : kBoundKeywords)
        if (s.contains(k))
          fail(std::string("'") + k + "' is supported on type 'integer' only, not 'number'", ptr + "/" + k);
      return number();
    }
    if (type == "integer") return bounded_integer(s, ptr);
    if (type == "boolean") return add("boolean", {lit("true"), lit("false")});
    if (type == "null") return add("null", {lit("null")});
    fail("unknown type '" + type + "'", ptr + "/type");
  }

  static constexpr const char* kBoundKeywords[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};

  int32_t bounded_integer(const Json& s, const std::string& ptr) {
    std::optional<int64_t> lo, hi;
    constexpr double kLimit = 1e15;  // integers are generated with at most 16 digits
    for (const char* k : kBoundKeywords) {
      if (!s.contains(k)) continue;
      const Json& v = s[k];
      if (!v.is_number()) fail(std::string("'") + k + "' must be a number", ptr + "/" + k);
      const double x = v.get<double>();
      if (!(std::fabs(x) < kLimit)) fail(std::string("'") + k + "' beyond +-1e15 is not supported", ptr + "/" + k);
      const std::string key = k;
      if (key == "minimum" || key == "exclusiveMinimum") {
        const auto b = static_cast<int64_t>(key == "minimum" ? std::ceil(x) : std::floor(x) + 1);
        lo = lo ? std::max(*lo, b) : b;
      } else {
        const auto b = static_cast<int64_t>(key == "maximum" ? std::floor(x) : std::ceil(x) - 1);
        hi = hi ? std::min(*hi, b) : b;
      }
    }
    if (!lo && !hi) return integer();
    if (lo && hi && *lo > *hi) fail("no integer lies between the minimum and the maximum", ptr);
    return add_integer_range_rule(g_, lo, hi, o_.max_integer_digits);
  }

  int32_t pattern(const Json& s, const std::string& ptr) {
    if (!s["pattern"].is_string()) fail("'pattern' must be a string", ptr + "/pattern");
    if (s.contains("minLength") || s.contains("maxLength"))
      fail("'pattern' together with 'minLength'/'maxLength' is not supported", ptr + "/pattern");
    int32_t body;
    try {
      body = add_json_string_pattern_rule(g_, s["pattern"].get<std::string>());
    } catch (const InvalidArgumentError& e) {
      fail(e.what(), ptr + "/pattern");
    }
    return add("pattern", {cat({lit("\""), {body}, lit("\"")})});
  }

  int32_t object(const Json& s, const std::string& ptr) {
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) fail("'required' must be an array of property names", ptr + "/required");
      for (size_t i = 0; i < r.size(); ++i) {
        if (!r[i].is_string()) fail("'required' entries must be strings", ptr + "/required/" + std::to_string(i));
        required.insert(r[i].get<std::string>());
      }
    }
    struct Prop {
      Seq member;
      bool required;
    };
    std::vector<Prop> props;
    if (s.contains("properties")) {
      const Json& p = s["properties"];
      if (!p.is_object()) fail("'properties' must be an object", ptr + "/properties");
      for (const auto& [name, sub] : p.items()) {
        const int32_t value = compile(sub, ptr + "/properties/" + escape_pointer_token(name));
        props.push_back({cat({literal_json(Json(name)), {ws_}, lit(":"), {ws_}, {value}}), required.count(name) > 0});
      }
    }
    for (const std::string& name : required) {
      if (!s.contains("properties") || !s["properties"].contains(name))
        fail("required property '" + name + "' is not listed in 'properties'", ptr + "/required");
    }
    // additionalProperties: false, as xgrammar's strict mode (vLLM's default), when properties are
    // listed and it is absent; any object when nothing is said at all.
    std::optional<int32_t> extra_value;
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) extra_value = compile(a, ptr + "/additionalProperties");
    } else if (props.empty()) {
      extra_value = any_value();
    }
    const Seq comma = cat({{ws_}, lit(","), {ws_}});
    // first[i] / rest[i]: properties i.. when none / some has been written (rest needs a comma).
    int32_t first, rest;
    if (extra_value) {
      const Seq member = cat({{string_rule(0, -1)}, {ws_}, lit(":"), {ws_}, {*extra_value}});
      rest = g_.add_rule("extra_more");
      g_.add_alternative(rest, {});
      g_.add_alternative(rest, cat({comma, member, {rest}}));
      first = add("extra", {{}, cat({member, {rest}})});
    } else {
      first = add("props_end", {{}});
      rest = first;
    }
    for (size_t i = props.size(); i-- > 0;) {
      const Prop& p = props[i];
      std::vector<Seq> f{cat({p.member, {rest}})}, r{cat({comma, p.member, {rest}})};
      if (!p.required) {
        f.push_back({first});
        r.push_back({rest});
      }
      const int32_t nf = add("props", f), nr = add("props_rest", r);
      first = nf;
      rest = nr;
    }
    return add("object", {cat({lit("{"), {ws_}, {first}, {ws_}, lit("}")})});
  }

  int32_t array(const Json& s, const std::string& ptr) {
    if (s.contains("prefixItems")) fail("unsupported keyword 'prefixItems'", ptr + "/prefixItems");
    const int32_t item = s.contains("items") ? compile(s["items"], ptr + "/items") : any_value();
    const int64_t min = count_keyword(s, "minItems", ptr, 0), max = count_keyword(s, "maxItems", ptr, -1);
    if (max >= 0 && max < min) fail("'maxItems' is below 'minItems'", ptr + "/maxItems");
    const int32_t items = repeat("items", {item}, cat({{ws_}, lit(","), {ws_}}), min, max);
    return add("array", {cat({lit("["), {ws_}, {items}, {ws_}, lit("]")})});
  }

  int32_t enumeration(const Json& values, const std::string& ptr) {
    if (!values.is_array() || values.empty()) fail("'enum' must be a non-empty array", ptr);
    std::vector<Seq> alts;
    for (const Json& v : values) alts.push_back(literal_json(v));
    return add("enum", alts);
  }

  int32_t any_of(const Json& schemas, const std::string& ptr) {
    if (!schemas.is_array() || schemas.empty()) fail("expected a non-empty array of schemas", ptr);
    std::vector<Seq> alts;
    for (size_t i = 0; i < schemas.size(); ++i) alts.push_back({compile(schemas[i], ptr + "/" + std::to_string(i))});
    return add("any_of", alts);
  }

  // Only local references ("#", "#/$defs/x", "#/definitions/x", any JSON pointer into this
  // document). The rule is registered before its target compiles, so recursion works.
  int32_t ref(const Json& r, const std::string& ptr) {
    if (!r.is_string() || r.get<std::string>().rfind('#', 0) != 0)
      fail("only local '$ref's (starting with '#') are supported", ptr);
    const std::string target = r.get<std::string>().substr(1);
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const Json* node = &root_;
    try {
      if (!target.empty()) node = &root_.at(Json::json_pointer(target));
    } catch (const nlohmann::json::exception&) {
      fail("'$ref' target '#" + target + "' does not exist", ptr);
    }
    const int32_t rule = g_.add_rule("ref" + target);
    refs_.emplace(target, rule);
    g_.add_alternative(rule, {compile(*node, target)});
    return rule;
  }

  int32_t string_char() {
    if (string_char_ < 0) {
      const auto t = [&](uint8_t lo, uint8_t hi) { return g_.terminal(byte_range(lo, hi)); };
      ByteSet plain = byte_range(0x20, 0x7F);
      plain.reset('"');
      plain.reset('\\');
      const auto hex = g_.terminal(byte_set_of("0123456789abcdefABCDEF"));
      // Well-formed UTF-8 only (RFC 3629), so every output decodes.
      std::vector<Seq> alts = utf8_multibyte_sequences(g_);
      alts.insert(alts.begin(), Seq{g_.terminal(plain)});
      for (Seq escape :
           std::vector<Seq>{cat({lit("\\"), {g_.terminal(byte_set_of("\"\\/bfnrt"))}}),
                            // \u escapes of non-surrogates only, so one escape is one character for maxLength.
                            cat({lit("\\u"), {g_.terminal(byte_set_of("0123456789abcABCeEfF"))}, {hex, hex, hex}}),
                            cat({lit("\\u"), {g_.terminal(byte_set_of("dD"))}, {t('0', '7'), hex, hex}})})
        alts.push_back(escape);
      string_char_ = add("char", alts);
    }
    return string_char_;
  }

  int32_t string_rule(int64_t min, int64_t max) {
    const auto key = std::make_pair(min, max);
    if (auto it = strings_.find(key); it != strings_.end()) return it->second;
    const int32_t chars = repeat("chars", {string_char()}, {}, min, max);
    const int32_t r = add("string", {cat({lit("\""), {chars}, lit("\"")})});
    strings_.emplace(key, r);
    return r;
  }

  int32_t digits(int64_t min, int64_t max) {
    return repeat("digits", {g_.terminal(byte_range('0', '9'))}, {}, min, max);
  }

  int32_t integer() {
    if (integer_ < 0) {
      const int32_t rest = digits(0, o_.max_integer_digits - 1);
      const int32_t magnitude = add("magnitude", {lit("0"), {g_.terminal(byte_range('1', '9')), rest}});
      integer_ = add("integer", {{magnitude}, cat({lit("-"), {magnitude}})});
    }
    return integer_;
  }

  int32_t number() {
    if (number_ < 0) {
      const int32_t frac = add("fraction", {{}, cat({lit("."), {digits(1, o_.max_fraction_digits)}})});
      const int32_t exp = add("exponent", {{},
                                           cat({{g_.terminal(byte_set_of("eE"))},
                                                {add("sign", {{}, lit("+"), lit("-")})},
                                                {digits(1, o_.max_exponent_digits)}})});
      number_ = add("number", {{integer(), frac, exp}});
    }
    return number_;
  }

  int32_t any_value() {
    if (any_value_ < 0) {
      any_value_ = g_.add_rule("value");
      const int32_t array_items = repeat("values", {any_value_}, cat({{ws_}, lit(","), {ws_}}), 0, -1);
      const int32_t any_array = add("array", {cat({lit("["), {ws_}, {array_items}, {ws_}, lit("]")})});
      for (Seq alt : std::vector<Seq>{
               {any_object()}, {any_array}, {string_rule(0, -1)}, {number()}, lit("true"), lit("false"), lit("null")})
        g_.add_alternative(any_value_, alt);
    }
    return any_value_;
  }

  Grammar& g_;
  const Json& root_;
  JsonGrammarOptions o_;
  int32_t ws_ = -1, any_value_ = -1, any_object_ = -1, string_char_ = -1, integer_ = -1, number_ = -1;
  std::map<std::pair<int64_t, int64_t>, int32_t> strings_;
  std::map<std::string, int32_t> refs_;
};

}  // namespace

Grammar json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& options) {
  Grammar g;
  Compiler c(g, schema, options);
  const int32_t root = g.add_rule("root");
  g.add_alternative(root, {c.compile(schema, "")});
  g.set_root(root);
  return g;
}

Grammar json_object_grammar(const JsonGrammarOptions& options) {
  Grammar g;
  const Json empty = Json::object();
  Compiler c(g, empty, options);
  const int32_t root = g.add_rule("root");
  g.add_alternative(root, {c.any_object()});
  g.set_root(root);
  return g;
}

std::shared_ptr<const CompiledGrammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                           const JsonGrammarOptions& options) {
  return std::make_shared<const CompiledGrammar>(json_schema_to_grammar(schema, options));
}

std::shared_ptr<const CompiledGrammar> compile_json_schema_text(std::string_view schema_text,
                                                                const JsonGrammarOptions& options) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("json_schema: not valid JSON (") + e.what() + ")");
  }
  return compile_json_schema(schema, options);
}

std::shared_ptr<const CompiledGrammar> compile_json_object(const JsonGrammarOptions& options) {
  return std::make_shared<const CompiledGrammar>(json_object_grammar(options));
}

}  // namespace opchain
