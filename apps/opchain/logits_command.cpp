// `opchain logits`: prefill logits for every position, written as a float32 .npy [n_ids, vocab].
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/opchain/commands.h"
#include "apps/opchain/precision_flag.h"
#include "core/error.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "io/npy.h"

namespace opchain::cli {

std::vector<int32_t> parse_ids(const std::string& ids, const std::string& ids_file) {
  std::string text = ids;
  if (!ids_file.empty()) {
    std::ifstream in(ids_file);
    if (!in) throw InvalidArgumentError("cannot read ids file " + ids_file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::vector<int32_t> out;
  std::string tok;
  auto flush = [&] {
    if (tok.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(tok, &used);
    } catch (...) {
      used = 0;
    }
    if (used != tok.size() || v < 0 || v > INT32_MAX) throw InvalidArgumentError("bad token id '" + tok + "'");
    out.push_back(static_cast<int32_t>(v));
    tok.clear();
  };
  for (char ch : text) {
    if (ch == ',' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '[' || ch == ']')
      flush();
    else
      tok += ch;
  }
  flush();
  if (out.empty()) throw InvalidArgumentError("no token ids given");
  return out;
}

Runner add_logits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "Prefill logits for every position as a float32 .npy");
  struct Opts {
    std::string model, ids, ids_file, vendor = "cpu", out = "logits.npy", precision = "auto";
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model, "Hugging Face model directory")->required();
  auto* ids = cmd->add_option("--ids", o->ids, "comma-separated token ids");
  auto* file = cmd->add_option("--ids-file", o->ids_file, "file of token ids (whitespace or comma separated)");
  ids->excludes(file);
  cmd->add_option("--vendor", o->vendor, "kernel vendor: cpu or reference");
  add_precision_flag(cmd, o->precision);
  cmd->add_option("--out", o->out, "output .npy path");
  return [o] {
    if (o->ids.empty() && o->ids_file.empty()) throw InvalidArgumentError("give --ids or --ids-file");
    const auto ids = parse_ids(o->ids, o->ids_file);
    LoadedModel m = load_model(o->model, o->vendor, {}, precision_choice(o->precision));
    const int64_t n = static_cast<int64_t>(ids.size());
    KvCache cache(m.model->cache_config(), 1 + (n + 15) / 16, 16, 1, kv_cache_dtype(m.device.matmul_precision));
    std::vector<int32_t> blocks;
    cache.allocator().allocate(cache.blocks_for(n), blocks);
    ModelRunner runner(*m.model, m.device, cache);
    SequenceStep step{ids, 0, blocks, true, cache.state_slots().allocate()};
    Tensor logits = runner.forward({&step, 1});
    write_npy_f32(o->out, {logits.size(0), logits.size(1)}, logits.data<float>());
    std::cerr << "wrote " << o->out << " [" << logits.size(0) << ", " << logits.size(1) << "]\n";
    return 0;
  };
}

}  // namespace opchain::cli
