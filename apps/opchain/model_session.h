#pragma once
// What generate, chat and serve share: a loaded model, its tokenizer, chat template, generation
// defaults and an engine, plus the engine flags they all accept.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/tokenizer.h"

namespace opchain::cli {

struct EngineFlags {
  std::string model, vendor = "cpu", precision = "auto";
  int threads = 0;
  int64_t block_size = 16;
  int64_t kv_cache_mb = 512;
  int64_t kv_blocks = 0;  // 0: derive from kv_cache_mb
  int64_t max_batch = 64;
  int64_t state_slots = 0;  // hybrid models; 0: derive from kv_cache_mb (Note [State memory])
  int64_t max_tokens_per_step = 2048;
  int64_t prefill_chunk = 512;
  bool graph = false, eager = false;  // --graph (the default) / --eager: EngineConfig::graph = !eager
  void add_to(CLI::App* cmd);
};

struct ModelSession {
  LoadedModel loaded;
  std::optional<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // absent when the model has none
  GenerationDefaults defaults;
  std::unique_ptr<LLMEngine> engine;
};

// "no tokenizer.json in <dir> (needed for text prompts)".
std::string no_tokenizer_message(const std::string& model_dir);

// Reads the model directory once (Note [Model directory]) and loads everything from it, drawing a progress bar on a
// terminal, then prints one summary line to stderr.
std::unique_ptr<ModelSession> open_session(const EngineFlags& flags, bool need_tokenizer);

}  // namespace opchain::cli
