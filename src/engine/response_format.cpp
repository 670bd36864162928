#include "engine/response_format.h"

#include "core/error.h"

namespace opchain {

std::shared_ptr<const CompiledGrammar> grammar_for_response_format(const nlohmann::ordered_json& rf,
                                                                   const JsonGrammarOptions& options) {
  if (!rf.is_object())
    throw InvalidArgumentError(std::string("response_format: expected an object, got ") + rf.type_name());
  auto type_it = rf.find("type");
  if (type_it == rf.end() || !type_it->is_string())
    throw InvalidArgumentError("response_format.type: required, one of 'text', 'json_object', 'json_schema'");
  const std::string type = type_it->get<std::string>();
  if (type == "text") return nullptr;
  if (type == "json_object") return compile_json_object(options);
  if (type != "json_schema")
    throw InvalidArgumentError("response_format.type: '" + type +
                               "' is not one of 'text', 'json_object', 'json_schema'");
  auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object())
    throw InvalidArgumentError(
        "response_format.json_schema: required (an object with 'name' and 'schema') when type is 'json_schema'");
  auto name = js->find("name");
  if (name == js->end() || !name->is_string())
    throw InvalidArgumentError("response_format.json_schema.name: required, a string");
  auto strict = js->find("strict");
  if (strict != js->end() && !strict->is_boolean() && !strict->is_null())
    throw InvalidArgumentError("response_format.json_schema.strict: must be a boolean");
  auto schema = js->find("schema");
  if (schema == js->end() || schema->is_null())
    throw InvalidArgumentError("response_format.json_schema.schema: required, a JSON schema");
  try {
    return compile_json_schema(*schema, options);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(std::string("response_format.json_schema.schema: ") + e.what());
  }
}

}  // namespace opchain
