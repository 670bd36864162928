#pragma once
// JSON Schema -> Grammar. The supported keywords and the choices made where JSON Schema leaves
// room (property order, whitespace, number length) are listed in docs/structured-outputs.md.
// Every rejected schema throws InvalidArgumentError naming the keyword and its JSON pointer, e.g.
// "json_schema: unsupported keyword 'pattern' at /properties/name".
#include <cstdint>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/compiled_grammar.h"
#include "engine/grammar.h"

namespace opchain {

struct JsonGrammarOptions {
  // Whitespace allowed in each gap between JSON tokens, at most this many bytes of [ \t\n\r]. A
  // bound, unlike xgrammar's "any whitespace", so a model cannot emit whitespace forever.
  int max_whitespace = 12;
  // Digits allowed in an integer part, a fraction and an exponent; again so generation ends.
  int max_integer_digits = 16, max_fraction_digits = 16, max_exponent_digits = 3;
};

// Properties are generated in the schema's order, hence ordered_json (a plain nlohmann::json
// sorts keys). The result's root is the value the schema describes, with no surrounding whitespace.
Grammar json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonGrammarOptions& options = {});
// Any JSON object (OpenAI's response_format {"type": "json_object"}).
Grammar json_object_grammar(const JsonGrammarOptions& options = {});

// The two above, compiled. `schema_text` is parsed first (InvalidArgumentError if it is not JSON).
std::shared_ptr<const CompiledGrammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                                           const JsonGrammarOptions& options = {});
std::shared_ptr<const CompiledGrammar> compile_json_schema_text(std::string_view schema_text,
                                                                const JsonGrammarOptions& options = {});
std::shared_ptr<const CompiledGrammar> compile_json_object(const JsonGrammarOptions& options = {});

}  // namespace opchain
