// The JSON-schema compiler and the byte automaton together: for each supported keyword, texts that
// validate are accepted as complete and texts that do not are rejected (dead or incomplete); each
// unsupported or malformed schema fails with the keyword and its JSON pointer in the message.
#include <gtest/gtest.h>

#include <optional>
#include <tuple>

#include "core/error.h"
#include "engine/json_schema_grammar.h"
#include "engine/response_format.h"

namespace opchain {
namespace {

bool complete(const CompiledGrammar& g, std::string_view text) {
  const int32_t s = g.advance(g.start_state(), text);
  return s != CompiledGrammar::kDead && g.accepting(s);
}
bool alive(const CompiledGrammar& g, std::string_view text) {
  return g.advance(g.start_state(), text) != CompiledGrammar::kDead;
}

std::shared_ptr<const CompiledGrammar> schema(const char* text) { return compile_json_schema_text(text); }

void expect_error(const char* schema_text, const std::string& fragment) {
  try {
    (void)compile_json_schema_text(schema_text);
    ADD_FAILURE() << "no error for " << schema_text;
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(JsonSchemaGrammar, ScalarTypes) {
  auto s = schema(R"({"type":"string"})");
  EXPECT_TRUE(complete(*s, R"("")"));
  EXPECT_TRUE(complete(*s, R"("h\u00e9llo \"x\" \n é 😀")"));
  EXPECT_FALSE(alive(*s, "\"a\x01"));     // control characters must be escaped
  EXPECT_FALSE(alive(*s, "\"\xC3\x28"));  // ill-formed UTF-8
  EXPECT_FALSE(alive(*s, R"("\ud800)"));  // lone surrogate escapes are not generated
  EXPECT_FALSE(complete(*s, R"("abc)"));
  auto i = schema(R"({"type":"integer"})");
  EXPECT_TRUE(complete(*i, "0"));
  EXPECT_TRUE(complete(*i, "-120"));
  EXPECT_FALSE(alive(*i, "01"));
  EXPECT_FALSE(alive(*i, "1.5"));
  auto n = schema(R"({"type":"number"})");
  for (const char* ok : {"0", "-1.25", "3e10", "2.5E-3"}) EXPECT_TRUE(complete(*n, ok)) << ok;
  EXPECT_FALSE(complete(*n, "1."));
  EXPECT_FALSE(alive(*n, "+1"));
  auto b = schema(R"({"type":["boolean","null"]})");
  EXPECT_TRUE(complete(*b, "true"));
  EXPECT_TRUE(complete(*b, "null"));
  EXPECT_FALSE(alive(*b, "1"));
}

TEST(JsonSchemaGrammar, IntegerRangesMatchExactlyTheIntegersInside) {
  const std::vector<std::tuple<std::optional<double>, std::optional<double>, bool, bool>> cases{
      {-23, 117, false, false},
      {0, 0, false, false},
      {5, std::nullopt, false, false},
      {std::nullopt, -7, false, false},
      {-120, -95, false, false},
      {1.5, 20.5, false, false},
      {-3, 10, true, true},
      {99, 1001, false, false}};
  for (const auto& [lo, hi, exclusive_lo, exclusive_hi] : cases) {
    nlohmann::ordered_json sch{{"type", "integer"}};
    if (lo) sch[exclusive_lo ? "exclusiveMinimum" : "minimum"] = *lo;
    if (hi) sch[exclusive_hi ? "exclusiveMaximum" : "maximum"] = *hi;
    auto g = compile_json_schema(sch);
    for (int64_t v = -1500; v <= 1500; ++v) {
      const auto d = static_cast<double>(v);
      const bool inside = (!lo || (exclusive_lo ? d > *lo : d >= *lo)) && (!hi || (exclusive_hi ? d < *hi : d <= *hi));
      ASSERT_EQ(complete(*g, std::to_string(v)), inside) << sch.dump() << " v=" << v;
    }
    EXPECT_FALSE(alive(*g, "-0"));
    EXPECT_FALSE(alive(*g, "01"));
  }
}

TEST(JsonSchemaGrammar, StringLength) {
  auto s = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(complete(*s, R"("a")"));
  EXPECT_TRUE(complete(*s, R"("ab")"));
  EXPECT_TRUE(complete(*s, R"("é\n😀")"));  // characters, not bytes
  EXPECT_FALSE(alive(*s, R"("abcd)"));
}

TEST(JsonSchemaGrammar, Pattern) {
  auto s = schema(R"({"type":"string","pattern":"^[a-z]{2,3}-\\d+(\\.[0-9]x?)?$"})");
  EXPECT_TRUE(complete(*s, R"("ab-12")"));
  EXPECT_TRUE(complete(*s, R"("abc-1.5x")"));
  EXPECT_FALSE(alive(*s, R"("abcd)"));
  EXPECT_FALSE(complete(*s, R"("ab-")"));
  auto alt = schema(R"({"pattern":"(foo|ba[rz])+|\\w*!"})");
  EXPECT_TRUE(complete(*alt, R"("foobazbar")"));
  EXPECT_TRUE(complete(*alt, R"("x_9!")"));
  EXPECT_FALSE(alive(*alt, R"("fo-)"));
  // A quote, anything but 'a', a backslash, anything but a newline: JSON escapes spell them.
  auto quote = schema(R"({"type":"string","pattern":"^\"[^a]\\\\.$"})");
  EXPECT_TRUE(complete(*quote, R"("\"é\\x")"));
  EXPECT_FALSE(alive(*quote, R"("\"a)"));
  EXPECT_FALSE(complete(*quote, R"("\"b\\\n")"));
  // \s inside a negated class keeps it ASCII: Python reads \s as Unicode whitespace.
  auto ascii = schema(R"({"type":"string","pattern":"[^a\\s]"})");
  EXPECT_TRUE(complete(*ascii, R"("b")"));
  EXPECT_FALSE(alive(*ascii, R"("é)"));
}

TEST(JsonSchemaGrammar, ObjectPropertiesRequiredAndOrder) {
  auto s = schema(R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}},"required":["a"]})");
  EXPECT_TRUE(complete(*s, R"({"b": 1, "a": "x"})"));
  EXPECT_TRUE(complete(*s, R"({"a":"x"})"));
  EXPECT_FALSE(complete(*s, R"({"b":1})"));    // a is required
  EXPECT_FALSE(alive(*s, R"({"a":"x","b")"));  // schema order, and no additional properties
  EXPECT_FALSE(alive(*s, R"({"c")"));
  EXPECT_TRUE(complete(*s, "{\n  \"a\" : \"x\"\n}"));
}

TEST(JsonSchemaGrammar, AdditionalProperties) {
  auto open =
      schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})");
  EXPECT_TRUE(complete(*open, R"({"a":1,"x":true,"y":false})"));
  EXPECT_FALSE(alive(*open, R"({"a":1,"x":1)"));
  auto any = schema(R"({"type":"object"})");
  EXPECT_TRUE(complete(*any, R"({"k":[1,{"z":null}],"m":"s"})"));
}

TEST(JsonSchemaGrammar, ArraysWithBounds) {
  auto s = schema(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})");
  EXPECT_FALSE(complete(*s, "[]"));
  EXPECT_TRUE(complete(*s, "[1]"));
  EXPECT_TRUE(complete(*s, "[1, 2,3]"));
  EXPECT_FALSE(alive(*s, "[1,2,3,"));
  EXPECT_FALSE(alive(*s, "[\"a\""));
}

TEST(JsonSchemaGrammar, EnumConstAnyOf) {
  auto e = schema(R"({"enum":["red",1,null,{"k":[true]}]})");
  for (const char* ok : {R"("red")", "1", "null", R"({"k":[true]})"}) EXPECT_TRUE(complete(*e, ok)) << ok;
  EXPECT_FALSE(alive(*e, R"("blue")"));
  auto c = schema(R"({"const":"x"})");
  EXPECT_TRUE(complete(*c, R"("x")"));
  auto a = schema(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})");
  EXPECT_TRUE(complete(*a, "12"));
  EXPECT_TRUE(complete(*a, R"("z")"));
  EXPECT_FALSE(alive(*a, R"("zz)"));
}

TEST(JsonSchemaGrammar, RefsAndRecursion) {
  auto s = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(complete(*s, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(alive(*s, R"({"v":1,"kids":[{"x")"));
}

TEST(JsonSchemaGrammar, WhitespaceIsBounded) {
  auto s = schema(R"({"type":"array"})");
  EXPECT_TRUE(complete(*s, "[ 1 ]"));
  EXPECT_FALSE(alive(*s, "[" + std::string(40, ' ')));
}

TEST(JsonSchemaGrammar, JsonObject) {
  auto g = compile_json_object();
  EXPECT_TRUE(complete(*g, R"({"a":{"b":[1,2.5,"x",true,null]}})"));
  EXPECT_FALSE(alive(*g, "[1]"));
  EXPECT_FALSE(alive(*g, "\"s\""));
}

TEST(JsonSchemaGrammar, ErrorsNameKeywordAndPointer) {
  expect_error(R"({"type":"string","format":"date","multipleOf":2})",
               "unsupported keyword 'multipleOf' at /multipleOf");
  expect_error(R"({"type":"string","pattern":"(?=a)b"})",
               "lookaround, named groups and inline flags are not supported at offset 1 at /pattern");
  expect_error(R"({"type":"string","pattern":"(a)\\1"})", "the escape '\\1' is not supported");
  expect_error(R"({"type":"string","pattern":"a{3,2}"})", "'{n,m}' with m below n");
  expect_error(R"({"type":"string","pattern":"a","maxLength":3})", "together with 'minLength'/'maxLength'");
  expect_error(R"({"properties":{"x":{"type":"integer","multipleOf":2}}})", "'multipleOf' at /properties/x/multipleOf");
  expect_error(R"({"type":"number","maximum":2})",
               "'maximum' is supported on type 'integer' only, not 'number' at /maximum");
  expect_error(R"({"type":"integer","minimum":3,"exclusiveMaximum":3})", "no integer lies between");
  expect_error(R"({"type":"strin"})", "unknown type 'strin' at /type");
  expect_error(R"({"$ref":"#/$defs/missing"})", "does not exist at /$ref");
  expect_error(R"({"$ref":"http://x/y.json"})", "only local");
  expect_error(R"({"type":"object","required":["q"]})", "required property 'q'");
  expect_error(R"({"type":"array","minItems":3,"maxItems":2})", "'maxItems' is below 'minItems' at /maxItems");
  expect_error(R"({"type":"string","maxLength":-1})", "'maxLength' must be a non-negative integer");
  expect_error(R"({"enum":[]})", "'enum' must be a non-empty array at /enum");
  expect_error(R"(false)", "matches nothing");
  expect_error(R"({"type":)", "not valid JSON");
}

TEST(ResponseFormat, Shapes) {
  using J = nlohmann::ordered_json;
  EXPECT_EQ(grammar_for_response_format(J{{"type", "text"}}), nullptr);
  EXPECT_NE(grammar_for_response_format(J{{"type", "json_object"}}), nullptr);
  auto g = grammar_for_response_format(J::parse(R"({"type":"json_schema","json_schema":{"name":"n","strict":true,
      "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}})"));
  EXPECT_TRUE(complete(*g, R"({"a":5})"));
  auto err = [](const char* text, const std::string& fragment) {
    try {
      (void)grammar_for_response_format(J::parse(text));
      ADD_FAILURE() << text;
    } catch (const InvalidArgumentError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(fragment, 0), 0u) << e.what();
    }
  };
  err(R"({"type":"xml"})", "response_format.type");
  err(R"({"type":"json_schema"})", "response_format.json_schema:");
  err(R"({"type":"json_schema","json_schema":{"schema":{}}})", "response_format.json_schema.name");
  err(R"({"type":"json_schema","json_schema":{"name":"n"}})", "response_format.json_schema.schema");
  err(R"({"type":"json_schema","json_schema":{"name":"n","schema":{"not":{}}}})",
      "response_format.json_schema.schema: json_schema: unsupported keyword 'not' at /not");
}

}  // namespace
}  // namespace opchain
