#include "tools/model_session.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/linear_weights.h"
#include "io/model_directory.h"

namespace opchain::tools {

static size_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

static std::string human_count(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  return buf;
}

std::string no_tokenizer_message(const std::string& model_dir) {
  return "no " + std::string(model_file::kTokenizer) + " in " + model_dir + " (needed for text prompts)";
}

std::unique_ptr<ModelSession> open_session(const EngineOptions& f, bool need_tokenizer) {
  if (f.threads > 0) ThreadPool::set_global_threads(f.threads);
  auto s = std::make_unique<ModelSession>();
  const bool tty = isatty(STDERR_FILENO);
  BuildProgress progress;
  if (tty) {
    progress = [](int64_t done, int64_t total) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
      std::fprintf(stderr, "\rloading [%s%s] %lld/%lld layers", std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), ' ').c_str(), static_cast<long long>(done),
                   static_cast<long long>(total));
      if (done == total) std::fprintf(stderr, "\r\033[K");
    };
  }
  const ModelDirectory dir = ModelDirectory::read(f.model);
  s->loaded = load_model(dir, f.vendor, progress, f.precision);
  if (dir.tokenizer.exists())
    s->tokenizer = Tokenizer::from_model_directory(dir);
  else if (need_tokenizer)
    throw FormatError(no_tokenizer_message(f.model));
  try {
    s->chat_template = ChatTemplate::from_model_directory(dir);
  } catch (const FormatError&) {
    s->chat_template.reset();  // no template: --chat reports it when asked
  }
  s->defaults = load_generation_defaults(dir, s->loaded.config.eos_token_ids);
  EngineConfig ec;
  ec.block_size = f.block_size;
  ec.kv_cache_bytes = static_cast<size_t>(f.kv_cache_mb) << 20;
  ec.num_blocks = f.kv_blocks;
  ec.max_batch = f.max_batch;
  ec.state_slots = f.state_slots;
  ec.max_tokens_per_step = f.max_tokens_per_step;
  ec.prefill_chunk = f.prefill_chunk;
  ec.graph = !f.eager;
  s->engine = std::make_unique<LLMEngine>(*s->loaded.model, s->loaded.device, s->tokenizer ? &*s->tokenizer : nullptr,
                                          ec, s->defaults.eos_ids);
  if (ec.graph && !s->engine->runner().graph_mode())
    std::fprintf(stderr, "graph mode off: %s; decode runs eager\n", s->engine->runner().graph_off_reason().c_str());
  const auto& c = s->loaded.config;
  std::fprintf(stderr,
               "loaded %s: %s parameters, %s weights, %d layers, vendor %s, %s matmuls, %.2f s, resident %.1f MiB "
               "(weights %.1f MiB, %s)\n",
               c.architecture.c_str(), human_count(s->loaded.model->parameter_count()).c_str(),
               describe_weights(*s->loaded.weights).c_str(), static_cast<int>(c.num_hidden_layers), f.vendor.c_str(),
               std::string(matmul_precision_name(s->loaded.device.matmul_precision)).c_str(), s->loaded.load_seconds,
               resident_bytes() / 1048576.0, s->loaded.weights->total_bytes() / 1048576.0,
               s->loaded.weight_placement.c_str());
  if (const EngineStats st = s->engine->stats(); st.state_slots_total > 0)
    std::fprintf(stderr, "linear-attention state: %lld slots x %.2f MiB (%.2f MiB), KV blocks %.1f MiB\n",
                 static_cast<long long>(st.state_slots_total),
                 static_cast<double>(KvCache::state_bytes_per_sequence(c)) / 1048576.0, st.state_bytes / 1048576.0,
                 (st.kv_cache_bytes - st.state_bytes) / 1048576.0);
  return s;
}

}  // namespace opchain::tools
