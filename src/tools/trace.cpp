#include "tools/trace.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "backends/communicator.h"
#include "core/error.h"
#include "core/trace.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "engine/model_worker.h"

namespace opchain::tools {

namespace {

// Where the time went: top-level time per registry key (nested calls are part of their parent's), then
// nested keys by their own time, each with its share of the traced wall time; times are divided by
// `per` (the decode summary reports one step's).
void print_op_summary(std::span<const TraceEvent> events, const std::string& title, int per, std::ostream& out) {
  struct Row {
    double us = 0;
    int calls = 0;
  };
  std::map<std::pair<int, std::string>, Row> rows;
  double top_us = 0;
  for (const auto& e : events) {
    Row& r = rows[{e.depth == 0 ? 0 : 1, e.key}];
    r.us += e.dur_us;
    ++r.calls;
    if (e.depth == 0) top_us += e.dur_us;
  }
  std::vector<std::pair<std::pair<int, std::string>, Row>> sorted(rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first.first != b.first.first ? a.first.first < b.first.first : a.second.us > b.second.us;
  });
  out << "\n"
      << title << " (top level: " << std::fixed << std::setprecision(1) << top_us / 1e3 / per << " ms in kernels)\n";
  for (const auto& [key, r] : sorted) {
    out << (key.first == 0 ? "  " : "    nested ") << std::left << std::setw(26) << key.second << std::right
        << std::setw(10) << std::setprecision(2) << r.us / 1e3 / per << " ms " << std::setw(6) << std::setprecision(1)
        << 100.0 * r.us / std::max(top_us, 1e-9) << "%  " << r.calls / per << " calls\n";
  }
}

}  // namespace

void run_trace(const TraceOptions& o, std::ostream& out, std::ostream& log) {
  // A profiling run, not a server: a bound keeps a mistyped batch from sizing a KV cache past memory.
  constexpr int kMaxTraceBatch = 1024;
  if (o.batch < 1 || o.batch > kMaxTraceBatch)
    throw InvalidArgumentError("trace: --batch must be between 1 and " + std::to_string(kMaxTraceBatch) + ", got " +
                               std::to_string(o.batch));
  // N copies of a long prompt make one prefill step of N times its tokens, with activations to match.
  constexpr int64_t kMaxBatchedPrefillTokens = 65536;
  const int64_t prefill_tokens = static_cast<int64_t>(o.prompt.size()) * o.batch;
  if (o.batch > 1 && prefill_tokens > kMaxBatchedPrefillTokens)
    throw InvalidArgumentError("trace: --batch " + std::to_string(o.batch) + " x " + std::to_string(o.prompt.size()) +
                               " prompt tokens is " + std::to_string(prefill_tokens) +
                               " tokens in one prefill step; at most " + std::to_string(kMaxBatchedPrefillTokens) +
                               " with --batch (use a shorter prompt)");
  const size_t batch = static_cast<size_t>(o.batch);
  LoadedModel m = load_model(o.model, o.vendor, {}, o.precision);
  const int64_t total = static_cast<int64_t>(o.prompt.size()) + o.decode_steps;
  const int64_t per_seq = (total + 15) / 16;
  KvCache cache(m.model->cache_config(), 1 + per_seq * o.batch, 16, o.batch, kv_cache_dtype(m.device.matmul_precision));
  // Every sequence its own ids, blocks and state slot. Copies of one prompt would route every token of a
  // step to the same experts, which no real batch does: sequence b's ids are the prompt's shifted by
  // b * 7919 modulo the vocabulary, so batch-mates touch experts as different requests do.
  std::vector<std::vector<int32_t>> ids(batch, o.prompt), blocks(batch);
  const int64_t vocab = m.config.vocab_size;
  for (size_t b = 1; b < batch && vocab > 0; ++b)
    for (int32_t& id : ids[b]) id = static_cast<int32_t>((id + static_cast<int64_t>(b) * 7919) % vocab);
  std::vector<int32_t> slots(batch);
  for (size_t b = 0; b < batch; ++b) {
    cache.allocator().allocate(cache.blocks_for(total), blocks[b]);
    slots[b] = cache.state_slots().allocate();
  }
  ModelRunner runner(*m.model, m.device, cache);
  std::vector<SequenceStep> steps(batch);
  auto prefill = [&] {
    for (size_t b = 0; b < batch; ++b) steps[b] = SequenceStep{ids[b], 0, blocks[b], false, slots[b]};
    return runner.forward(steps);
  };
  for (int w = 0; w < o.warmup; ++w) prefill();  // same positions and blocks: each run rewrites the same KV
  // Under mpirun every rank traces its own calls; the workers' reach the Chrome trace as lanes of
  // their own (Note [Driver and workers]).
  WorkerChannel* workers = worker_channel(m.device);
  if (workers) workers->trace_begin();
  Tracer tracer;
  Tracer::set_active(&tracer);
  struct Reset {
    ~Reset() { Tracer::set_active(nullptr); }
  } reset;
  Tensor logits = prefill();
  const size_t prefill_events = tracer.events().size();
  for (int s = 0; s < o.decode_steps; ++s) {
    for (size_t b = 0; b < batch; ++b) {  // row b of the logits is sequence b's last token
      const float* row = logits.data<float>() + static_cast<int64_t>(b) * logits.size(1);
      int32_t best = 0;
      for (int64_t v = 1; v < logits.size(1); ++v)
        if (row[v] > row[best]) best = static_cast<int32_t>(v);
      const int64_t past = static_cast<int64_t>(ids[b].size());
      ids[b].push_back(best);
      steps[b] = SequenceStep{std::span<const int32_t>(&ids[b].back(), 1), past, blocks[b], false, slots[b]};
    }
    logits = runner.forward(steps);
  }
  out << "model " << m.config.architecture << " vendor " << o.vendor << ", " << tracer.events().size() << " op calls\n";
  out << "module path -> nn module -> OpType -> backend impl -> registry key -> vendor kernel | metadata | tensors | "
         "time\n";
  for (const auto& e : tracer.events()) {
    out << std::string(static_cast<size_t>(e.depth) * 4, ' ') << e.module_path << " -> " << e.nn_module << " -> "
        << e.op_type << " -> " << e.impl << " -> " << e.key << " -> " << e.vendor << ":" << e.kernel;
    if (!e.metadata.empty()) out << " | " << e.metadata;
    out << " | " << e.tensors << " | " << std::fixed << std::setprecision(1) << e.dur_us << " us\n";
  }
  const std::span<const TraceEvent> events(tracer.events());
  print_op_summary(events, "per-op time", 1, out);
  if (o.decode_steps > 0)
    print_op_summary(events.subspan(prefill_events),
                     "per decode step of batch " + std::to_string(o.batch) + ", mean of " +
                         std::to_string(o.decode_steps) + " steps",
                     o.decode_steps, out);
  if (workers) workers->trace_end(o.chrome_trace.empty() ? std::string() : o.chrome_trace);
  if (!o.chrome_trace.empty()) {
    nlohmann::json events = chrome_trace_events(tracer.events(), 0);
    for (int r = 1; workers && r < m.device.placement.world->size(); ++r) {
      const std::string part = o.chrome_trace + ".rank" + std::to_string(r) + ".json";
      std::ifstream in(part);
      if (!in) throw InvalidArgumentError("rank " + std::to_string(r) + "'s trace " + part + " is missing");
      for (auto& e : nlohmann::json::parse(in)) events.push_back(std::move(e));
      in.close();
      std::remove(part.c_str());
    }
    std::ofstream file(o.chrome_trace);
    if (!file) throw InvalidArgumentError("cannot write " + o.chrome_trace);
    file << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
    log << "wrote " << o.chrome_trace << "\n";
  }
}

}  // namespace opchain::tools
