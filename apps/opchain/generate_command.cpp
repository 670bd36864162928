// `opchain generate`: one prompt streamed to stdout, or a JSONL file of prompts run together through
// continuous batching (--json: one result object per prompt, in input order).
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/opchain/commands.h"
#include "apps/opchain/model_session.h"
#include "core/error.h"
#include "engine/json_schema_grammar.h"

namespace opchain::cli {

namespace {

struct GenerateOpts {
  EngineFlags engine;
  std::string prompt, prompt_ids, prompts_file;
  int64_t max_new_tokens = 0;
  std::optional<float> temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::string json_schema;
  bool json_object = false;
  bool chat = false, json = false, ignore_eos = false, no_thinking = false;
};

std::vector<int32_t> encode_prompt(const ModelSession& s, const std::string& text, bool chat, bool no_thinking) {
  if (!s.tokenizer) throw FormatError(no_tokenizer_message(s.loaded.dir));
  if (!chat) return s.tokenizer->encode(text);
  if (!s.chat_template) throw FormatError("--chat: " + s.loaded.dir + " has no chat template");
  nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  nlohmann::json extra = nlohmann::json::object();
  if (no_thinking) extra["enable_thinking"] = false;
  return s.tokenizer->encode(s.chat_template->render(messages, nlohmann::json(), true, extra));
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt (or many, batched together)");
  auto o = std::make_shared<GenerateOpts>();
  o->engine.add_to(cmd);
  auto* p1 = cmd->add_option("--prompt", o->prompt, "prompt text");
  auto* p2 = cmd->add_option("--prompt-ids", o->prompt_ids, "prompt as comma-separated token ids");
  auto* p3 = cmd->add_option("--prompts-file", o->prompts_file,
                             "JSONL: {\"prompt\": ...} or {\"prompt_ids\": [...]} per line");
  p1->excludes(p2)->excludes(p3);
  p2->excludes(p3);
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "most tokens to generate (default: generation_config or 256)");
  cmd->add_option("--temperature", o->temperature, "0 = greedy");
  cmd->add_option("--top-p", o->top_p);
  cmd->add_option("--top-k", o->top_k);
  cmd->add_option("--min-p", o->min_p);
  cmd->add_option("--repetition-penalty", o->repetition_penalty);
  cmd->add_option("--presence-penalty", o->presence_penalty);
  cmd->add_option("--frequency-penalty", o->frequency_penalty);
  cmd->add_option("--seed", o->seed, "random seed (same seed, same output)");
  cmd->add_option("--stop", o->stop, "stop string (repeatable)");
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template");
  cmd->add_flag("--no-thinking", o->no_thinking, "with --chat: enable_thinking=false");
  cmd->add_flag("--json", o->json, "one JSON result per prompt");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "do not stop at the eos token");
  auto* schema = cmd->add_option("--json-schema", o->json_schema,
                                 "constrain the output to JSON valid under this JSON Schema file");
  cmd->add_flag("--json-object", o->json_object, "constrain the output to a JSON object")->excludes(schema);
  return [o] {
    if (o->prompt.empty() && o->prompt_ids.empty() && o->prompts_file.empty())
      throw InvalidArgumentError("give --prompt, --prompt-ids or --prompts-file");
    auto session = open_session(o->engine, o->prompt_ids.empty());
    GenerationRequest base;
    base.sampling = session->defaults.sampling;
    if (o->temperature) base.sampling.temperature = *o->temperature;
    if (o->top_p) base.sampling.top_p = *o->top_p;
    if (o->top_k) base.sampling.top_k = *o->top_k;
    if (o->min_p) base.sampling.min_p = *o->min_p;
    if (o->repetition_penalty) base.sampling.repetition_penalty = *o->repetition_penalty;
    if (o->presence_penalty) base.sampling.presence_penalty = *o->presence_penalty;
    if (o->frequency_penalty) base.sampling.frequency_penalty = *o->frequency_penalty;
    if (o->seed) base.sampling.seed = *o->seed;
    base.max_new_tokens = o->max_new_tokens > 0                  ? o->max_new_tokens
                          : session->defaults.max_new_tokens > 0 ? session->defaults.max_new_tokens
                                                                 : 256;
    base.stop = o->stop;
    base.ignore_eos = o->ignore_eos;
    if (!o->json_schema.empty()) {
      std::ifstream in(o->json_schema);
      if (!in) throw InvalidArgumentError("cannot read --json-schema " + o->json_schema);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        base.grammar = compile_json_schema_text(text);
      } catch (const InvalidArgumentError& e) {
        throw InvalidArgumentError("--json-schema " + o->json_schema + ": " + e.what());
      }
    } else if (o->json_object) {
      base.grammar = compile_json_object();
    }

    std::vector<GenerationRequest> requests;
    if (!o->prompts_file.empty()) {
      std::ifstream in(o->prompts_file);
      if (!in) throw InvalidArgumentError("cannot read --prompts-file " + o->prompts_file);
      std::string line;
      int line_no = 0;
      while (std::getline(in, line)) {
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
          throw InvalidArgumentError(o->prompts_file + ":" + std::to_string(line_no) + ": not valid JSON (" + e.what() +
                                     ")");
        }
        GenerationRequest r = base;
        if (j.is_object() && j.contains("prompt_ids") && j["prompt_ids"].is_array()) {
          for (const auto& v : j["prompt_ids"]) {
            if (!v.is_number_integer())
              throw InvalidArgumentError(o->prompts_file + ":" + std::to_string(line_no) +
                                         ": prompt_ids must be integers");
            r.prompt_ids.push_back(v.get<int32_t>());
          }
        } else if (j.is_object() && j.contains("prompt") && j["prompt"].is_string()) {
          r.prompt_ids = encode_prompt(*session, j["prompt"].get<std::string>(), o->chat, o->no_thinking);
        } else {
          throw InvalidArgumentError(o->prompts_file + ":" + std::to_string(line_no) +
                                     ": expected {\"prompt\": \"...\"} or {\"prompt_ids\": [...]}");
        }
        requests.push_back(std::move(r));
      }
      if (requests.empty()) throw InvalidArgumentError("--prompts-file " + o->prompts_file + " holds no prompts");
    } else {
      GenerationRequest r = base;
      r.prompt_ids = o->prompt_ids.empty() ? encode_prompt(*session, o->prompt, o->chat, o->no_thinking)
                                           : parse_ids(o->prompt_ids, "");
      requests.push_back(std::move(r));
    }

    LLMEngine& engine = *session->engine;
    if (requests.size() == 1 && !o->json) {
      // Stream: print each piece of text the moment it is safe to show.
      engine.add_request(std::move(requests[0]), [](const StreamEvent& ev) {
        std::cout << ev.text_delta << std::flush;
        if (ev.finished) std::cout << "\n";
      });
      while (engine.step()) {
      }
      return 0;
    }
    const auto outputs = engine.generate(std::move(requests));
    for (const auto& out : outputs) {
      if (o->json) {
        nlohmann::json j{{"ids", out.ids},
                         {"text", out.text},
                         {"prompt_tokens", out.prompt_tokens},
                         {"completion_tokens", out.completion_tokens},
                         {"finish_reason", finish_reason_name(out.finish_reason)}};
        std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      } else {
        std::cout << out.text << "\n";
      }
    }
    return 0;
  };
}

}  // namespace opchain::cli
