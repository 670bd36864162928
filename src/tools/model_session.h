#pragma once
// What generate, chat and serve share: a loaded model, its tokenizer, chat template, generation
// defaults and an engine, opened from the engine options they all accept.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/generation_config.h"
#include "engine/llm_engine.h"
#include "engine/loaded_model.h"
#include "io/chat_template.h"
#include "io/tokenizer.h"

namespace opchain::tools {

struct EngineOptions {
  std::string model;           // Hugging Face model directory
  std::string vendor = "cpu";  // kernel vendor
  PrecisionChoice precision = PrecisionChoice::Auto;
  int threads = 0;  // worker threads; 0: all cores
  int64_t block_size = 16;
  int64_t kv_cache_mb = 512;
  int64_t kv_blocks = 0;  // 0: derive from kv_cache_mb
  int64_t max_batch = 64;
  int64_t state_slots = 0;  // hybrid models; 0: derive from kv_cache_mb (Note [State memory])
  int64_t max_tokens_per_step = 2048;
  int64_t prefill_chunk = 512;
  bool eager = false;  // EngineConfig::graph = !eager
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

// Reads the model directory once (Note [Model directory]) and loads everything from it, drawing a
// progress bar on a terminal, then prints one summary line to stderr.
std::unique_ptr<ModelSession> open_session(const EngineOptions& options, bool need_tokenizer);

}  // namespace opchain::tools
