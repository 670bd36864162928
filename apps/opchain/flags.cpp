#include "apps/opchain/flags.h"

#include "core/error.h"
#include "tools/token_ids.h"

namespace opchain::cli {

CLI::Validator at_least(int64_t min) {
  const std::string bound = "an integer >= " + std::to_string(min);
  return CLI::Validator(
      [min, bound](std::string& value) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(value, v) || v < min) return "must be " + bound + ", got " + value;
        return {};
      },
      "INT>=" + std::to_string(min));
}

void add_model_flag(CLI::App* cmd, std::string& dir) {
  cmd->add_option("--model", dir, "Hugging Face model directory")->required();
}

void add_vendor_flag(CLI::App* cmd, std::string& vendor) {
  cmd->add_option("--vendor", vendor, "kernel vendor: cpu, reference or a plugin's")->capture_default_str();
}

void add_precision_flag(CLI::App* cmd, PrecisionChoice& precision) {
  cmd->add_option_function<std::string>(
         "--precision",
         // The validator lets only its five names through.
         [&precision](const std::string& s) { precision = parse_precision_choice(s).value_or(PrecisionChoice::Auto); },
         "matmul activations: f32 (the reference numerics; quantised weights dequantised exactly), bf16 "
         "(rounded to bf16 before bf16 or quantised weights, as a bf16 run computes), quantized (what a "
         "quantised checkpoint's format names: int8 or fp8 activations, else bf16), int8 (as quantized, but "
         "int4 weights meet int8 activations per weight group: integer dot products, faster, at the "
         "activations' int8 rounding), auto (quantized for a quantised checkpoint, bf16 for a bf16 one, "
         "else f32)")
      ->check(CLI::IsMember({"auto", "f32", "bf16", "quantized", "int8"}))
      ->default_str("auto");
}

void add_threads_flag(CLI::App* cmd, int& threads) {
  cmd->add_option("--threads", threads, "worker threads (default: all cores)");
}

void add_block_size_flag(CLI::App* cmd, int64_t& block_size) {
  cmd->add_option("--block-size", block_size, "KV cache block size in tokens")->capture_default_str();
}

void add_decode_mode_flags(CLI::App* cmd, bool* graph, bool& eager) {
  auto* g = cmd->add_flag_callback(
      "--graph",
      [graph] {
        if (graph) *graph = true;
      },
      "decode steps replay graphs captured per batch bucket (the default; bench: graph only)");
  cmd->add_flag("--eager", eager, "run every decode step eagerly, through the modules (bench: eager only)")
      ->excludes(g);
}

void add_decode_steps_flag(CLI::App* cmd, int& steps) {
  cmd->add_option("--decode-steps", steps, "greedy decode steps after the prefill")->capture_default_str();
}

void add_engine_flags(CLI::App* cmd, tools::EngineOptions& o) {
  add_model_flag(cmd, o.model);
  add_vendor_flag(cmd, o.vendor);
  add_precision_flag(cmd, o.precision);
  add_threads_flag(cmd, o.threads);
  add_block_size_flag(cmd, o.block_size);
  cmd->add_option("--kv-cache-mb", o.kv_cache_mb, "KV cache memory in MiB (hybrid models: KV blocks and state slots)");
  cmd->add_option("--kv-blocks", o.kv_blocks, "exactly this many KV blocks, block 0 reserved (overrides --kv-cache-mb)")
      ->check(at_least(1));
  cmd->add_option("--state-slots", o.state_slots,
                  "hybrid models: sequences that hold linear-attention state at once (default: as many as fit in "
                  "half of --kv-cache-mb, at most --max-batch)");
  cmd->add_option("--max-batch", o.max_batch, "most sequences in one step");
  cmd->add_option("--max-tokens-per-step", o.max_tokens_per_step, "token budget of one step");
  cmd->add_option("--prefill-chunk", o.prefill_chunk, "most prompt tokens of one sequence per step");
  add_decode_mode_flags(cmd, nullptr, o.eager);
}

std::vector<int32_t> IdsFlags::parse() const {
  if (ids.empty() && ids_file.empty()) throw InvalidArgumentError("give --ids or --ids-file");
  return tools::parse_token_ids(ids, ids_file);
}

CLI::Option* add_ids_flags(CLI::App* cmd, IdsFlags& f) {
  auto* ids = cmd->add_option("--ids", f.ids, "prompt token ids, comma-separated");
  cmd->add_option("--ids-file", f.ids_file, "file of prompt token ids (whitespace or comma separated)");
  return ids;
}

void add_max_new_tokens_flag(CLI::App* cmd, int64_t& n) {
  cmd->add_option("--max-new-tokens", n,
                  "most tokens to generate for a prompt (default: generation_config's, else 256) or a chat reply "
                  "(default 1024)");
}

void add_temperature_flag(CLI::App* cmd, std::optional<float>& t) { cmd->add_option("--temperature", t, "0 = greedy"); }

void add_no_thinking_flag(CLI::App* cmd, bool& no_thinking) {
  cmd->add_flag("--no-thinking", no_thinking, "chat template with enable_thinking=false (generate: with --chat)");
}

void add_json_flag(CLI::App* cmd, bool& json) {
  cmd->add_flag("--json", json, "print JSON on stdout (generate: one result object per prompt)");
}

void add_json_schema_flag(CLI::App* cmd, std::string& file) {
  cmd->add_option("--json-schema", file,
                  "a JSON Schema file: generate constrains its output to JSON valid under it; bench instead times "
                  "the structured-output token mask per token for it over the model's vocabulary");
}

void add_out_flag(CLI::App* cmd, std::string& out, bool required) {
  auto* o = cmd->add_option("--out", out, "output: a .npy file (logits), else a model directory (created if missing)");
  if (required) o->required();
}

void add_shard_size_flag(CLI::App* cmd, int64_t& mib) {
  cmd->add_option("--shard-size-mb", mib,
                  "split the weights into shards of at most this many MiB (default: 4096, as transformers shards "
                  "large models)");
}

void add_quant_flags(CLI::App* cmd, tools::QuantSpec& q, const std::string& format_flag, bool format_required) {
  auto* opt =
      cmd->add_option(format_flag, q.format,
                      "quantised format: fp8-block (quant_method fp8, block scales), gptq (4-bit), awq (4-bit gemm), "
                      "w8a8 (compressed-tensors int8 weights and dynamic int8 activations), w4a16 (compressed-tensors "
                      "pack-quantized int4)")
          ->check(CLI::IsMember({"fp8-block", "gptq", "awq", "w8a8", "w4a16"}));
  if (format_required) opt->required();
  cmd->add_option("--group-size", q.group_size, "gptq, awq, w4a16: input channels per scale (-1: one group per row)")
      ->capture_default_str();
  cmd->add_option("--block", q.block, "fp8-block: weight_block_size as ROWS,COLS")->capture_default_str();
  cmd->add_option("--symmetric", q.symmetric,
                  "true or false (default: gptq and w4a16 symmetric, awq with zero points, as their producers)")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_flag("--act-order", q.act_order, "gptq: desc_act with a g_idx; w4a16: actorder group with weight_g_idx");
  cmd->add_flag("--lm-head", q.lm_head,
                "quantise the output projection too (gptq lm_head: true; compressed-tensors; fp8); a tied one "
                "gets a quantised copy of the embedding and the config is untied");
  cmd->add_option("--gptq-format", q.gptq_format,
                  "gptq checkpoint_format: gptq (v1, zeros stored minus one) or gptq_v2")
      ->check(CLI::IsMember({"gptq", "gptq_v2"}))
      ->capture_default_str();
  cmd->add_option("--scale-dtype", q.scale_dtype,
                  "dtype of the stored scales: f32, bf16 or f16 (default: fp8 f32, gptq and awq f16, "
                  "compressed-tensors the model's own)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
}

void add_parallel_flags(CLI::App* cmd, tools::ParallelOptions& p) {
  cmd->add_option("--tp", p.tp, "tensor-parallel ranks per model replica (under mpirun; docs/scale-out.md)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--ep", p.ep, "expert-parallel ranks the experts are split over (under mpirun)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--moe-comm", p.moe_comm,
                  "how expert-parallel ranks exchange tokens: auto (alltoall for decode-sized steps, allgather above), "
                  "allgather or alltoall")
      ->check(CLI::IsMember({"auto", "allgather", "alltoall"}))
      ->capture_default_str();
}

void add_vendor_plugin_flag(CLI::App* cmd, std::vector<std::string>& plugins) {
  cmd->add_option("--vendor-plugin", plugins,
                  "load a vendor plugin (a shared library built against include/opchain/vendor_abi.h); "
                  "repeatable; also OPCHAIN_VENDOR_PLUGINS=path:path");
}

}  // namespace opchain::cli
