// The JSON-schema compiler and the byte automaton together: for each supported keyword, texts that
// validate are accepted as complete and texts that do not are rejected (dead or incomplete); each
// unsupported or malformed schema fails with the keyword and its JSON pointer in the message.
#include <gtest/gtest.h>

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
  EXPECT_FALSE(alive(*s, "\"a\x01"));          // control characters must be escaped
  EXPECT_FALSE(alive(*s, "\"\xC3\x28"));       // ill-formed UTF-8
  EXPECT_FALSE(alive(*s, R"("\ud800)"));        // lone surrogate escapes are not generated
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

TEST(JsonSchemaGrammar, StringLength) {
  auto s = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(complete(*s, R"("a")"));
  EXPECT_TRUE(complete(*s, R"("ab")"));
  EXPECT_TRUE(complete(*s, R"("é\n😀")"));  // characters, not bytes
  EXPECT_FALSE(alive(*s, R"("abcd)"));
}

TEST(JsonSchemaGrammar, ObjectPropertiesRequiredAndOrder) {
  auto s = schema(R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}},"required":["a"]})");
  EXPECT_TRUE(complete(*s, R"({"b": 1, "a": "x"})"));
  EXPECT_TRUE(complete(*s, R"({"a":"x"})"));
  EXPECT_FALSE(complete(*s, R"({"b":1})"));         // a is required
  EXPECT_FALSE(alive(*s, R"({"a":"x","b")"));        // schema order, and no additional properties
  EXPECT_FALSE(alive(*s, R"({"c")"));
  EXPECT_TRUE(complete(*s, "{\n  \"a\" : \"x\"\n}"));
}

TEST(JsonSchemaGrammar, AdditionalProperties) {
  auto open = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})");
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
  expect_error(R"({"type":"string","pattern":"a+"})", "unsupported keyword 'pattern' at /pattern");
  expect_error(R"({"properties":{"x":{"type":"integer","minimum":0}}})", "'minimum' at /properties/x/minimum");
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
