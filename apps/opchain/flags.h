#pragma once
// Every flag that more than one command takes, declared here once with one help text.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/model_session.h"
#include "tools/parallel_run.h"
#include "tools/quant_spec.h"

namespace opchain::cli {

// An integer flag's lower bound: "must be an integer >= 1, got 0" (CLI11's PositiveNumber prints its
// range up to DBL_MAX, 300 digits).
CLI::Validator at_least(int64_t min);

void add_model_flag(CLI::App* cmd, std::string& dir);
void add_vendor_flag(CLI::App* cmd, std::string& vendor);
void add_precision_flag(CLI::App* cmd, PrecisionChoice& precision);
void add_threads_flag(CLI::App* cmd, int& threads);
void add_block_size_flag(CLI::App* cmd, int64_t& block_size);
// `graph` null: --graph names the default and sets nothing.
void add_decode_mode_flags(CLI::App* cmd, bool* graph, bool& eager);
void add_decode_steps_flag(CLI::App* cmd, int& steps);
// What generate, chat and serve share: the model, its vendor and the engine's sizes.
void add_engine_flags(CLI::App* cmd, tools::EngineOptions& o);

struct IdsFlags {
  std::string ids, ids_file;
  std::vector<int32_t> parse() const;  // neither given: InvalidArgumentError
};
CLI::Option* add_ids_flags(CLI::App* cmd, IdsFlags& f);  // returns --ids

void add_max_new_tokens_flag(CLI::App* cmd, int64_t& n);
void add_temperature_flag(CLI::App* cmd, std::optional<float>& t);
template <class T>
void add_seed_flag(CLI::App* cmd, T& seed) {
  cmd->add_option("--seed", seed, "random seed: the same seed gives the same output");
}
void add_no_thinking_flag(CLI::App* cmd, bool& no_thinking);
void add_json_flag(CLI::App* cmd, bool& json);
void add_json_schema_flag(CLI::App* cmd, std::string& file);
void add_out_flag(CLI::App* cmd, std::string& out, bool required);
void add_shard_size_flag(CLI::App* cmd, int64_t& mib);
// `format_flag` is --format (quantize) or --quantize (make-model).
void add_quant_flags(CLI::App* cmd, tools::QuantSpec& q, const std::string& format_flag, bool format_required);
void add_parallel_flags(CLI::App* cmd, tools::ParallelOptions& p);
void add_vendor_plugin_flag(CLI::App* cmd, std::vector<std::string>& plugins);

}  // namespace opchain::cli
