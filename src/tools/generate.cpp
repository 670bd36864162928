#include "tools/generate.h"

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/json_schema_grammar.h"
#include "tools/token_ids.h"

namespace opchain::tools {

namespace {

std::vector<int32_t> encode_prompt(const ModelSession& s, const std::string& text, bool chat, bool no_thinking) {
  if (!s.tokenizer) throw FormatError(no_tokenizer_message(s.loaded.dir));
  if (!chat) return s.tokenizer->encode(text);
  if (!s.chat_template) throw FormatError("--chat: " + s.loaded.dir + " has no chat template");
  nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  nlohmann::json extra = nlohmann::json::object();
  if (no_thinking) extra["enable_thinking"] = false;
  return s.tokenizer->encode(s.chat_template->render(messages, nlohmann::json(), true, extra));
}

// The request every prompt starts from: the model's defaults under the options' overrides.
GenerationRequest base_request(const GenerateOptions& o, const GenerationDefaults& defaults) {
  GenerationRequest base;
  base.sampling = defaults.sampling;
  if (o.temperature) base.sampling.temperature = *o.temperature;
  if (o.top_p) base.sampling.top_p = *o.top_p;
  if (o.top_k) base.sampling.top_k = *o.top_k;
  if (o.min_p) base.sampling.min_p = *o.min_p;
  if (o.repetition_penalty) base.sampling.repetition_penalty = *o.repetition_penalty;
  if (o.presence_penalty) base.sampling.presence_penalty = *o.presence_penalty;
  if (o.frequency_penalty) base.sampling.frequency_penalty = *o.frequency_penalty;
  if (o.seed) base.sampling.seed = *o.seed;
  base.max_new_tokens = o.max_new_tokens > 0          ? o.max_new_tokens
                        : defaults.max_new_tokens > 0 ? defaults.max_new_tokens
                                                      : 256;
  base.stop = o.stop;
  base.ignore_eos = o.ignore_eos;
  if (!o.json_schema.empty()) {
    std::ifstream in(o.json_schema);
    if (!in) throw InvalidArgumentError("cannot read --json-schema " + o.json_schema);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      base.grammar = compile_json_schema_text(text);
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError("--json-schema " + o.json_schema + ": " + e.what());
    }
  } else if (o.json_object) {
    base.grammar = compile_json_object();
  }
  return base;
}

std::vector<GenerationRequest> read_prompts_file(const GenerateOptions& o, const ModelSession& session,
                                                 const GenerationRequest& base) {
  std::vector<GenerationRequest> requests;
  std::ifstream in(o.prompts_file);
  if (!in) throw InvalidArgumentError("cannot read --prompts-file " + o.prompts_file);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = o.prompts_file + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw InvalidArgumentError(where + ": not valid JSON (" + e.what() + ")");
    }
    GenerationRequest r = base;
    if (j.is_object() && j.contains("prompt_ids") && j["prompt_ids"].is_array()) {
      for (const auto& v : j["prompt_ids"]) {
        if (!v.is_number_integer()) throw InvalidArgumentError(where + ": prompt_ids must be integers");
        r.prompt_ids.push_back(v.get<int32_t>());
      }
    } else if (j.is_object() && j.contains("prompt") && j["prompt"].is_string()) {
      r.prompt_ids = encode_prompt(session, j["prompt"].get<std::string>(), o.chat, o.no_thinking);
    } else {
      throw InvalidArgumentError(where + ": expected {\"prompt\": \"...\"} or {\"prompt_ids\": [...]}");
    }
    requests.push_back(std::move(r));
  }
  if (requests.empty()) throw InvalidArgumentError("--prompts-file " + o.prompts_file + " holds no prompts");
  return requests;
}

}  // namespace

void run_generate(const GenerateOptions& o, std::ostream& out) {
  if (o.prompt.empty() && o.prompt_ids.empty() && o.prompts_file.empty())
    throw InvalidArgumentError("give --prompt, --prompt-ids or --prompts-file");
  auto session = open_session(o.engine, o.prompt_ids.empty());
  const GenerationRequest base = base_request(o, session->defaults);
  std::vector<GenerationRequest> requests;
  if (!o.prompts_file.empty()) {
    requests = read_prompts_file(o, *session, base);
  } else {
    GenerationRequest r = base;
    r.prompt_ids =
        o.prompt_ids.empty() ? encode_prompt(*session, o.prompt, o.chat, o.no_thinking) : parse_token_ids(o.prompt_ids);
    requests.push_back(std::move(r));
  }

  LLMEngine& engine = *session->engine;
  if (requests.size() == 1 && !o.json) {
    // Stream: print each piece of text the moment it is safe to show.
    engine.add_request(std::move(requests[0]), [&out](const StreamEvent& ev) {
      out << ev.text_delta << std::flush;
      if (ev.finished) out << "\n";
    });
    while (engine.step()) {
    }
    return;
  }
  const auto outputs = engine.generate(std::move(requests));
  for (const auto& r : outputs) {
    if (o.json) {
      nlohmann::json j{{"ids", r.ids},
                       {"text", r.text},
                       {"prompt_tokens", r.prompt_tokens},
                       {"completion_tokens", r.completion_tokens},
                       {"finish_reason", finish_reason_name(r.finish_reason)}};
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      out << r.text << "\n";
    }
  }
}

}  // namespace opchain::tools
