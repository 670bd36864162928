#pragma once
// OpenAI's `response_format` request field -> the grammar that enforces it, for the HTTP server
// (and anyone else taking OpenAI-shaped requests). Shapes accepted, as vLLM's OpenAI server:
//   {"type": "text"}                                   -> nullptr (unconstrained)
//   {"type": "json_object"}                            -> any JSON object
//   {"type": "json_schema", "json_schema": {"name": "...", "schema": {...}, "strict": true,
//                                           "description": "..."}}  -> that schema
// "strict" and "description" are accepted and do not change the grammar (enforcement is always
// strict). Throws InvalidArgumentError whose message starts with the offending parameter's path,
// e.g. "response_format.json_schema.schema: unsupported keyword 'pattern' at /properties/id", so a
// server can answer 400 with it as is.
#include <memory>

#include <nlohmann/json.hpp>

#include "engine/compiled_grammar.h"
#include "engine/json_schema_grammar.h"

namespace opchain {

std::shared_ptr<const CompiledGrammar> grammar_for_response_format(const nlohmann::ordered_json& response_format,
                                                                   const JsonGrammarOptions& options = {});

}  // namespace opchain
