#pragma once
// opchain as a library: open a Hugging Face model directory, tokenize, apply its chat template, and
// generate, one prompt at a time or many at once through the continuously batching engine that
// `opchain generate` and `opchain serve` run. This header is the whole public API: it needs only the
// C++ standard library, and no type of the engine's own appears in it. Link libopchain
// (CMake: find_package(opchain) and opchain::opchain; pkg-config: opchain). docs/library.md walks
// through it; examples/library/ is a complete program.
//
//   opchain::api::LLM llm("models/trained-qwen3-moe");
//   opchain::api::SamplingParams greedy;
//   greedy.temperature = 0;
//   greedy.max_tokens = 40;
//   opchain::api::Output out = llm.generate("The cat", greedy);
//
// Threads: every method may be called from any thread. The engine runs inside step(), and wait(),
// run() and generate() call step() until their work is done; one step runs at a time. Callbacks run on
// the thread that is stepping, inside the step: they may call submit() and cancel(), never step(),
// run(), wait() or generate() (that would wait on itself).
//
// Errors: every failure throws opchain::api::Error whose what() is the engine's message, which names
// the file, field, argument or op at fault (e.g. "cannot read m/config.json (is 'm' a Hugging Face
// model directory?)").
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__GNUC__)
#define OPCHAIN_API __attribute__((visibility("default")))
#else
#define OPCHAIN_API
#endif

namespace opchain::api {

class OPCHAIN_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  ~Error() override;
};

// How a model is opened. Each field mirrors the `opchain generate` flag of the same name.
struct ModelOptions {
  std::string vendor = "cpu";          // kernel vendor: "cpu" or "reference"
  std::string precision = "auto";      // matmul precision: "auto", "f32", "bf16", "quantized" or "int8" (--precision)
  int threads = 0;                     // worker threads, for the whole process; 0: leave as is (all cores)
  int64_t kv_cache_mb = 512;           // KV cache memory in MiB (hybrid models: KV blocks and state slots)
  int64_t max_batch = 64;              // most sequences in one step
  int64_t block_size = 16;             // KV cache block size in tokens
  int64_t max_tokens_per_step = 2048;  // token budget of one step
  int64_t prefill_chunk = 512;         // most prompt tokens of one sequence per step
  bool graph = true;                   // decode steps replay captured graphs; false: eager (--eager)
};

// What to generate. An unset field takes the model's generation_config.json value, or the engine's
// default when the file has none (temperature 1, no top-k/top-p/min-p, no penalties), as
// `opchain generate` does.
struct SamplingParams {
  std::optional<float> temperature;  // 0: greedy
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<float> presence_penalty;
  std::optional<float> frequency_penalty;
  std::optional<uint64_t> seed;     // same seed, same tokens
  int64_t max_tokens = 0;           // most tokens to generate; 0: generation_config's, else 256
  std::vector<std::string> stop;    // stop strings (not part of the text)
  bool ignore_eos = false;          // keep going past the model's end-of-sequence tokens
  bool skip_special_tokens = true;  // leave special tokens out of the text
};

enum class FinishReason { None, Stop, Length, Cancelled };
// "none", "stop", "length", "cancelled".
OPCHAIN_API const char* to_string(FinishReason reason);

// A finished request.
struct Output {
  uint64_t request_id = 0;
  std::string text;                // the generated text (stop strings and tokens left out)
  std::vector<int32_t> token_ids;  // the generated ids (the eos id included when it stopped the request)
  int64_t prompt_tokens = 0;
  FinishReason finish_reason = FinishReason::None;
};

// One streaming update. The pieces of a request concatenate to its Output::text.
struct Piece {
  uint64_t request_id = 0;
  int32_t token = -1;     // the token sampled this step; -1 on a last piece that only flushes text
  std::string text;       // text that became safe to show (may be empty while a character is incomplete)
  bool finished = false;  // the request's last piece
  FinishReason finish_reason = FinishReason::None;  // set on the last piece
};
using PieceCallback = std::function<void(const Piece&)>;

// A snapshot of the engine, refreshed after every step.
struct Metrics {
  int64_t running = 0;           // requests in the running batch
  int64_t waiting = 0;           // requests queued for a place in it
  int64_t steps = 0;             // engine steps since the model was opened
  int64_t prompt_tokens = 0;     // prompt tokens prefilled since then (recomputed ones included)
  int64_t generated_tokens = 0;  // tokens generated since then
  int64_t preemptions = 0;       // sequences pushed out of a full KV cache (and later recomputed)
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  size_t kv_cache_bytes = 0;  // memory the KV cache holds
  double last_step_ms = 0;
};

struct ModelInfo {
  std::string architecture;  // config.json's, e.g. "Qwen3MoeForCausalLM"
  int64_t vocab_size = 0;
  int64_t num_layers = 0;
  int64_t parameters = 0;
  int64_t max_context = 0;       // most tokens one sequence may hold (prompt and output)
  std::string matmul_precision;  // what "auto" resolved to: "f32", "bf16", "quantized" or "int8"
  bool has_tokenizer = false;    // false: ids only (tokenize and text prompts throw)
  bool has_chat_template = false;
};

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class OPCHAIN_API LLM {
 public:
  // Opens a Hugging Face model directory (config.json, safetensors weights, and optionally
  // tokenizer.json, tokenizer_config.json, generation_config.json, a chat template) and starts an
  // engine on it.
  explicit LLM(const std::string& model_dir, const ModelOptions& options = {});
  ~LLM();
  LLM(LLM&&) noexcept;
  LLM& operator=(LLM&&) noexcept;
  LLM(const LLM&) = delete;
  LLM& operator=(const LLM&) = delete;

  ModelInfo info() const;

  // Text to ids as Hugging Face's encode(text, add_special_tokens=False); ids back to text.
  std::vector<int32_t> tokenize(const std::string& text) const;
  std::string detokenize(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  // The prompt the model's chat template makes of a conversation, as transformers'
  // apply_chat_template(messages, add_generation_prompt=..., enable_thinking=...) renders it.
  // enable_thinking unset: the template's own default.
  std::string apply_chat_template(const std::vector<Message>& messages, bool add_generation_prompt = true,
                                  std::optional<bool> enable_thinking = std::nullopt) const;

  // One prompt (text, or token ids) run to completion. on_piece, when given, sees each piece as it
  // is generated, on this thread.
  Output generate(const std::string& prompt, const SamplingParams& params = {}, const PieceCallback& on_piece = {});
  Output generate_ids(const std::vector<int32_t>& prompt_ids, const SamplingParams& params = {},
                      const PieceCallback& on_piece = {});
  // Many prompts, batched together by the engine; outputs in input order.
  std::vector<Output> generate_batch(const std::vector<std::string>& prompts, const SamplingParams& params = {});

  // The engine directly: submit queues a request and returns its id at once (it throws when the
  // request cannot run: an empty prompt, one past the context, bad sampling parameters, a full
  // queue). Requests make progress only inside step(), which runs one scheduling step over all of
  // them and returns false when there is nothing to do; wait() steps until one request is done and
  // returns its output (each output is handed out once); run() steps until all are done.
  uint64_t submit(const std::string& prompt, const SamplingParams& params = {}, PieceCallback on_piece = {});
  uint64_t submit_ids(const std::vector<int32_t>& prompt_ids, const SamplingParams& params = {},
                      PieceCallback on_piece = {});
  bool step();
  void run();
  Output wait(uint64_t request_id);
  // Stops a request at the next step; its output keeps what was generated, with
  // FinishReason::Cancelled. Unknown or finished ids are ignored.
  void cancel(uint64_t request_id);

  Metrics metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opchain::api
