#include "tools/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "backends/communicator.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/decode_graph_runner.h"
#include "engine/kv_cache.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"
#include "models/decoder.h"
#include "ops/registry.h"

namespace opchain::tools {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.front(), v.back()};
}

json to_json(const Stats& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

// Sums the time spent inside top-level kernel launches, eager or replayed, while it is alive. It
// runs in its own pass so that the throughput passes pay nothing for it.
class KernelClock final : public LaunchObserver {
 public:
  KernelClock() { LaunchObserver::set_active(this); }
  ~KernelClock() override { LaunchObserver::set_active(nullptr); }
  KernelClock(const KernelClock&) = delete;
  KernelClock& operator=(const KernelClock&) = delete;
  void before_launch(const KernelEntry&, const void*) override { start_ = Clock::now(); }
  void after_launch(const KernelEntry&, const void*) override {
    seconds += std::chrono::duration<double>(Clock::now() - start_).count();
    ++launches;
  }
  double seconds = 0;
  int64_t launches = 0;

 private:
  Clock::time_point start_;
};

// What KernelClock adds to a step outside the intervals it measures, per launch: subtracted from
// the host time, which would otherwise count the measurement itself.
double kernel_clock_overhead_s() {
  KernelEntry entry;
  constexpr int kLaunches = 20000;
  double best = 1e9;
  for (int pass = 0; pass < 5; ++pass) {
    KernelClock clock;
    LaunchObserver* obs = LaunchObserver::active();
    const auto start = Clock::now();
    for (int i = 0; i < kLaunches; ++i) {
      obs->before_launch(entry, nullptr);
      obs->after_launch(entry, nullptr);
    }
    best = std::min(best, (seconds_since(start) - clock.seconds) / kLaunches);
  }
  return std::max(0.0, best);
}

// Deterministic ids spread over the whole vocabulary; `stream` keeps different sequences apart.
std::vector<int32_t> pseudo_random_ids(uint64_t stream, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = 0x2545f4914f6cdd1dull * (stream + 1);
  for (auto& id : ids) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    id = static_cast<int32_t>((z ^ (z >> 31)) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

// Streaming read bandwidth over a buffer far larger than the last-level cache, read by the kernels'
// own thread pool. Returns the best pass in GB/s: the ceiling decode is measured against.
double measure_read_bandwidth_gbs(size_t bytes, int passes) {
  using V = uint64_t __attribute__((vector_size(32)));
  const size_t n = std::max<size_t>(bytes / sizeof(V), 1024);
  auto buf = std::make_unique_for_overwrite<V[]>(n);
  ThreadPool& pool = ThreadPool::global();
  const int threads = pool.num_threads();
  // Each thread first-touches the part it later reads (page placement on NUMA machines).
  pool.parallel_for(threads, [&](int, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (size_t i = n * static_cast<size_t>(t) / threads; i < n * static_cast<size_t>(t + 1) / threads; ++i)
        buf[i] = V{i, i + 1, i + 2, i + 3};
  });
  std::vector<uint64_t> sinks(static_cast<size_t>(threads));
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    const auto start = Clock::now();
    pool.parallel_for(threads, [&](int, int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const size_t b = n * static_cast<size_t>(t) / threads, e = n * static_cast<size_t>(t + 1) / threads;
        // Four independent accumulators keep several loads in flight.
        V a0{}, a1{}, a2{}, a3{};
        size_t i = b;
        for (; i + 4 <= e; i += 4) {
          a0 += buf[i];
          a1 += buf[i + 1];
          a2 += buf[i + 2];
          a3 += buf[i + 3];
        }
        for (; i < e; ++i) a0 += buf[i];
        const V s = a0 + a1 + a2 + a3;
        sinks[static_cast<size_t>(t)] = s[0] + s[1] + s[2] + s[3];
      }
    });
    const double sec = seconds_since(start);
    best = std::max(best, static_cast<double>(n * sizeof(V)) / sec / 1e9);
  }
  // Make the sums observable so the reads cannot be optimised away.
  volatile uint64_t keep = 0;
  for (uint64_t s : sinks) keep = keep + s;
  (void)keep;
  return best;
}

// What one decode step of `batch` sequences must read from memory.
struct DecodeBytes {
  double weights = 0;  // see kFormula
  double kv = 0;       // K and V of `depth` cached tokens per sequence (in the cache's dtype)
  double state = 0;    // hybrid models: each sequence's linear-attention state, read and written once
};

constexpr const char* kFormula =
    "bandwidth_share = (weight_bytes_per_step / bandwidth) / measured step time; weight_bytes_per_step = all "
    "weights except the embedding table and the routed experts + batch embedding rows (+ the whole table when it "
    "doubles as a tied lm_head) + per MoE layer E*(1-(1-k/E)^B) * bytes of one expert (the expected number of "
    "distinct experts that B tokens, each choosing k of E uniformly, touch). The KV cache reads (kv_bytes_per_step) "
    "are reported but not in the share, nor are a hybrid model's state reads and writes (state_bytes_per_step: "
    "2 x batch x the state of one sequence, which mostly stays in the caches).";

constexpr const char* kHostFormula =
    "host_ms = median over steps of (the step's wall time - the time inside its top-level kernel launches - the "
    "timer's own calibrated cost per launch), measured in a pass of its own; kernel_ms = median time inside kernels "
    "per step. Eager host time is module dispatch, step building and metadata; graph host time is filling the "
    "bucket's buffers, the metadata update and the replay loop.";

class DecodeByteModel {
 public:
  explicit DecodeByteModel(const LoadedModel& m)
      : c_(m.config), kv_elem_bytes_(static_cast<double>(dtype_size(kv_cache_dtype(m.device.matmul_precision)))) {
    // Per-expert tensors or the fused ones (Qwen3.5), under the text model's prefix.
    static const std::regex expert(
        R"((?:model\.|model\.language_model\.)layers\.(\d+)\.mlp\.experts\.(?:\d+\..*|gate_up_proj|down_proj))");
    std::smatch match;
    for (const auto& name : m.weights->names()) {
      if (name.rfind("mtp.", 0) == 0 || name.rfind("model.visual.", 0) == 0) continue;  // not run for text
      const double bytes = static_cast<double>(m.weights->numel(name)) *
                           static_cast<double>(dtype_size(m.weights->get_any_shape(name).dtype()));
      if (std::regex_match(name, match, expert))
        expert_bytes_[std::stoll(match[1].str())] += bytes;
      else if (name == c_.weight_prefix + "embed_tokens.weight") {
        embed_row_bytes_ = bytes / static_cast<double>(c_.vocab_size);
        if (lm_head_is_embedding(c_, *m.weights)) dense_bytes_ += bytes;
      } else
        dense_bytes_ += bytes;
    }
  }

  DecodeBytes at(int64_t batch, int64_t depth) const {
    DecodeBytes b;
    b.weights = dense_bytes_ + embed_row_bytes_ * static_cast<double>(batch);
    if (c_.num_experts > 0) {
      const double e = static_cast<double>(c_.num_experts), k = static_cast<double>(c_.num_experts_per_tok);
      const double distinct = e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(batch)));
      for (const auto& [layer, bytes] : expert_bytes_) b.weights += distinct * bytes / e;
    }
    b.kv =
        static_cast<double>(batch * depth * c_.num_full_attention_layers() * 2 * c_.num_key_value_heads * c_.head_dim) *
        kv_elem_bytes_;
    b.state = 2.0 * static_cast<double>(batch) * static_cast<double>(KvCache::state_bytes_per_sequence(c_));
    return b;
  }

 private:
  ModelConfig c_;
  double kv_elem_bytes_;
  double dense_bytes_ = 0, embed_row_bytes_ = 0;
  std::map<int64_t, double> expert_bytes_;  // per MoE layer, all its experts
};

int64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports kilobytes
}

std::string fmt(double v, int precision = 1) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::string fmt_stats(const Stats& s, int precision = 1) {
  return fmt(s.median, precision) + " [" + fmt(s.min, precision) + ", " + fmt(s.max, precision) + "]";
}

void check_positive(const std::vector<int64_t>& v, const std::string& flag) {
  if (v.empty()) throw InvalidArgumentError(flag + " needs at least one value");
  for (int64_t x : v)
    if (x <= 0) throw InvalidArgumentError(flag + " values must be positive, got " + std::to_string(x));
}

}  // namespace

void run_bench(const BenchOptions& o, std::ostream& out, std::ostream& log_stream) {
  check_positive(o.prompt_lens, "--prompt-lens");
  check_positive(o.batches, "--batches");
  if (o.gen <= 0) throw InvalidArgumentError("--gen must be positive, got " + std::to_string(o.gen));
  if (o.depth < 0) throw InvalidArgumentError("--depth must not be negative, got " + std::to_string(o.depth));
  if (o.reps <= 0) throw InvalidArgumentError("--reps must be positive, got " + std::to_string(o.reps));
  if (o.bandwidth_mib <= 0) throw InvalidArgumentError("--bandwidth-mib must be positive");
  if (o.threads < 0) throw InvalidArgumentError("--threads must be positive, got " + std::to_string(o.threads));
  if (o.threads > 0) ThreadPool::set_global_threads(o.threads);
  const int threads = ThreadPool::global().num_threads();

  LoadedModel m = load_model(o.model, o.vendor, {}, o.precision);
  const ModelConfig& c = m.config;
  const int64_t max_prompt = *std::max_element(o.prompt_lens.begin(), o.prompt_lens.end());
  const int64_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const int64_t context = o.depth + o.gen;
  if (std::max(max_prompt, context) > c.max_position_embeddings)
    throw InvalidArgumentError("bench needs " + std::to_string(std::max(max_prompt, context)) +
                               " positions but the model's context is " + std::to_string(c.max_position_embeddings));

  // The decode sequences keep their blocks for the whole run; the prompts borrow theirs one at a time.
  constexpr int64_t kBlock = 16;
  const int64_t per_seq = (context + kBlock - 1) / kBlock;
  // Hybrid models: a state slot per decode sequence (0 .. max_batch-1) and one for the prompts.
  KvCache cache(m.model->cache_config(), 1 + max_batch * per_seq + (max_prompt + kBlock - 1) / kBlock, kBlock,
                max_batch + 1, kv_cache_dtype(m.device.matmul_precision));
  const int32_t prompt_slot = static_cast<int32_t>(max_batch);
  ModelRunner runner(*m.model, m.device, cache);
  auto log = [&](const std::string& s) {
    if (!o.json) log_stream << s << std::endl;
  };
  // Graph decode replays on its own runner over the same cache; prefill stays on the eager one.
  std::unique_ptr<ModelRunner> graph_runner;
  if (!o.eager) {
    const auto start = Clock::now();
    graph_runner = std::make_unique<ModelRunner>(*m.model, m.device, cache);
    if (graph_runner->enable_graph_mode(max_batch)) {
      log("captured " + std::to_string(graph_runner->graphs()->buckets().size()) +
          " decode graph buckets up to batch " + std::to_string(max_batch) + " in " +
          fmt(seconds_since(start) * 1000.0) + " ms");
    } else {
      log_stream << "graph mode off: " << graph_runner->graph_off_reason() << "; decode runs eager\n";
      graph_runner.reset();
    }
  }
  struct DecodeMode {
    std::string name;
    ModelRunner* runner;
  };
  std::vector<DecodeMode> modes;
  if (!o.graph || !graph_runner) modes.push_back({"eager", &runner});
  if (graph_runner) modes.push_back({"graph", graph_runner.get()});

  // Prefill: one sequence, the whole prompt in one step. The untimed first step faults the mapped
  // weights in, so the first repetition does not pay for the page cache.
  auto prefill_once = [&](int64_t len, uint64_t stream) {
    const auto ids = pseudo_random_ids(stream, len, c.vocab_size);
    std::vector<int32_t> blocks;
    if (!cache.allocator().allocate(cache.blocks_for(len), blocks)) throw Error("bench: KV cache sized too small");
    SequenceStep step{ids, 0, blocks, false, prompt_slot};
    const auto start = Clock::now();
    runner.forward({&step, 1});
    const double sec = seconds_since(start);
    cache.allocator().free(blocks);
    return sec;
  };
  log("warm-up prefill of " + std::to_string(o.prompt_lens.front()) + " tokens");
  prefill_once(o.prompt_lens.front(), 999);
  json prefill = json::array();
  std::vector<std::pair<int64_t, Stats>> prefill_rows;
  for (int64_t len : o.prompt_lens) {
    std::vector<double> tok_s;
    for (int r = 0; r < o.reps; ++r)
      tok_s.push_back(static_cast<double>(len) / prefill_once(len, static_cast<uint64_t>(r)));
    prefill_rows.emplace_back(len, stats_of(tok_s));
    prefill.push_back({{"prompt_len", len}, {"tok_s", to_json(prefill_rows.back().second)}});
    log("prefill " + std::to_string(len) + ": " + fmt_stats(prefill_rows.back().second) + " tok/s");
  }

  // Decode: every sequence first gets `depth` cached tokens (untimed prefills of at most kFillChunk
  // tokens a step, several sequences a step when they are short, to amortise the weight reads; one
  // forward over the whole depth would hold every position's activations at once: 6.5 GB at 16k on the
  // Qwen3-30B-A3B shape). The smaller batches reuse the first sequences of the largest one, and each
  // repetition decodes the same positions depth .. depth+gen-1 again, overwriting its own KV rows.
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(max_batch));
  for (auto& t : tables)
    if (!cache.allocator().allocate(per_seq, t)) throw Error("bench: KV cache sized too small");
  if (o.depth > 0) {
    log("filling the KV cache: " + std::to_string(max_batch) + " sequences x " + std::to_string(o.depth) + " tokens");
    constexpr int64_t kFillChunk = 2048;
    const int64_t chunk = std::min(o.depth, kFillChunk), per_step = std::max<int64_t>(1, kFillChunk / chunk);
    std::vector<std::vector<int32_t>> ids;
    for (int64_t s = 0; s < max_batch; ++s)
      ids.push_back(pseudo_random_ids(1000 + static_cast<uint64_t>(s), o.depth, c.vocab_size));
    for (int64_t s0 = 0; s0 < max_batch; s0 += per_step)
      for (int64_t p0 = 0; p0 < o.depth; p0 += chunk) {
        std::vector<SequenceStep> steps;
        for (int64_t s = s0; s < std::min(max_batch, s0 + per_step); ++s)
          steps.push_back({std::span<const int32_t>(ids[static_cast<size_t>(s)])
                               .subspan(static_cast<size_t>(p0), static_cast<size_t>(std::min(chunk, o.depth - p0))),
                           p0, tables[static_cast<size_t>(s)], false, static_cast<int32_t>(s)});
        runner.forward(steps);
      }
  }
  // Each decode step feeds fresh pseudo-random tokens: distinct tokens route to distinct experts, as
  // real sampled continuations do.
  std::vector<std::vector<int32_t>> gen_ids;
  for (int64_t s = 0; s < max_batch; ++s)
    gen_ids.push_back(pseudo_random_ids(5000 + static_cast<uint64_t>(s), o.gen, c.vocab_size));
  // Only the forward call is timed: building the step's list is the bench's work, not the engine's.
  auto decode_step = [&](ModelRunner& r, int64_t batch, int64_t s) {
    std::vector<SequenceStep> steps;
    for (int64_t b = 0; b < batch; ++b)
      steps.push_back({std::span<const int32_t>(gen_ids[static_cast<size_t>(b)].data() + s, 1), o.depth + s,
                       tables[static_cast<size_t>(b)], false, static_cast<int32_t>(b)});
    const auto start = Clock::now();
    r.forward(steps);
    return seconds_since(start);
  };
  struct ModeRow {
    std::string mode;
    Stats tok_s, ms;
    double kernel_ms = 0, host_ms = 0;  // per step (medians): time inside kernels, and the rest of the step
    // Per step (medians), under mpirun: time inside this rank's collectives (the driver's step
    // broadcast included) and the bytes it sent plus received (docs/scale-out.md).
    double comm_ms = 0, comm_bytes = 0;
  };
  // This rank's collectives so far, over the world and its groups (Note [Communicator]).
  const auto comm_now = [&] {
    CommStats sum;
    const ParallelPlacement& pl = m.device.placement;
    std::vector<const Communicator*> seen;
    for (const Communicator* c : {pl.world, pl.tp, pl.ep}) {
      if (!c || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
      seen.push_back(c);
      sum.collectives += c->stats().collectives;
      sum.bytes_sent += c->stats().bytes_sent;
      sum.bytes_received += c->stats().bytes_received;
      sum.seconds += c->stats().seconds;
    }
    return sum;
  };
  const bool distributed = m.device.placement.world && m.device.placement.world->size() > 1;
  const double clock_overhead_s = kernel_clock_overhead_s();
  struct DecodeRow {
    int64_t batch;
    std::vector<ModeRow> modes;
  };
  std::vector<DecodeRow> decode_rows;
  for (int64_t batch : o.batches) {
    DecodeRow row{batch, {}};
    // The modes take turns repetition by repetition, so that a neighbour's burst on this shared
    // machine slows both alike instead of landing on whichever mode ran in that minute.
    for (const DecodeMode& mode : modes) {
      decode_step(*mode.runner, batch, 0);  // warm-up: workspace growth and the experts this batch size touches
      if (mode.name == "graph" && !mode.runner->last_step_replayed())
        throw Error("bench: a decode step of batch " + std::to_string(batch) + " did not replay its graph");
    }
    std::vector<std::vector<double>> ms(modes.size()), kernel_ms(modes.size()), host_ms(modes.size()),
        comm_ms(modes.size()), comm_bytes(modes.size());
    for (int r = 0; r < o.reps; ++r) {
      for (size_t m = 0; m < modes.size(); ++m) {
        double sec = 0;
        for (int64_t s = 0; s < o.gen; ++s) sec += decode_step(*modes[m].runner, batch, s);
        ms[m].push_back(sec * 1000.0 / static_cast<double>(o.gen));
      }
      // Host time per step from the same step's wall and kernel times, so that a kernel slowed by
      // another process counts in both and cancels; the median drops steps preempted on the host.
      for (size_t m = 0; m < modes.size(); ++m) {
        for (int64_t s = 0; s < o.gen; ++s) {
          KernelClock clock;
          const CommStats before = comm_now();
          const double wall = decode_step(*modes[m].runner, batch, s);
          const CommStats after = comm_now();
          comm_ms[m].push_back((after.seconds - before.seconds) * 1000.0);
          comm_bytes[m].push_back(
              static_cast<double>(after.bytes_sent - before.bytes_sent + after.bytes_received - before.bytes_received));
          kernel_ms[m].push_back(clock.seconds * 1000.0);
          host_ms[m].push_back(
              std::max(0.0, wall - clock.seconds - static_cast<double>(clock.launches) * clock_overhead_s) * 1000.0);
        }
      }
    }
    for (size_t m = 0; m < modes.size(); ++m) {
      // tok/s is the same figure as ms/step, inverted, so that the two never disagree (with an even
      // number of repetitions a median of each would average different pairs).
      const Stats ms_stats = stats_of(ms[m]);
      const auto per_s = [&](double step_ms) { return static_cast<double>(batch) * 1000.0 / step_ms; };
      const Stats tok_s{per_s(ms_stats.median), per_s(ms_stats.max), per_s(ms_stats.min)};
      ModeRow mr{modes[m].name,
                 tok_s,
                 ms_stats,
                 stats_of(kernel_ms[m]).median,
                 stats_of(host_ms[m]).median,
                 stats_of(comm_ms[m]).median,
                 stats_of(comm_bytes[m]).median};
      log("decode batch " + std::to_string(batch) + " " + modes[m].name + ": " + fmt_stats(mr.tok_s) + " tok/s, " +
          fmt_stats(mr.ms, 3) + " ms/step, host " + fmt(mr.host_ms, 3) + " ms/step" +
          (distributed ? ", comm " + fmt(mr.comm_ms, 3) + " ms/step and " + fmt(mr.comm_bytes / 1024.0, 1) +
                             " KiB/step on rank 0"
                       : std::string()));
      row.modes.push_back(std::move(mr));
    }
    decode_rows.push_back(std::move(row));
  }

  // Peak RSS before the bandwidth buffer, which would otherwise dominate it.
  const int64_t rss = peak_rss_bytes();
  log("measuring memory read bandwidth over " + std::to_string(o.bandwidth_mib) + " MiB");
  const double bw_gbs = measure_read_bandwidth_gbs(static_cast<size_t>(o.bandwidth_mib) << 20, std::max(3, o.reps));

  const DecodeByteModel byte_model(m);
  // The row's headline figures (tok_s, ms_per_step, bandwidth_share) are graph mode's when it ran,
  // as generate and serve decode that way; each mode's own figures sit under its name.
  json decode = json::array();
  for (const auto& row : decode_rows) {
    const DecodeBytes bytes = byte_model.at(row.batch, o.depth);
    const double bound_ms = bytes.weights / (bw_gbs * 1e9) * 1000.0;
    const ModeRow& head = row.modes.back();
    json d = {{"batch", row.batch},
              {"mode", head.mode},
              {"tok_s", to_json(head.tok_s)},
              {"ms_per_step", to_json(head.ms)},
              {"weight_bytes_per_step", bytes.weights},
              {"kv_bytes_per_step", bytes.kv},
              {"state_bytes_per_step", bytes.state},
              {"bound_ms_per_step", bound_ms},
              {"bandwidth_share", bound_ms / head.ms.median}};
    for (const ModeRow& mr : row.modes)
      d[mr.mode] = {{"tok_s", to_json(mr.tok_s)},         {"ms_per_step", to_json(mr.ms)},
                    {"kernel_ms_per_step", mr.kernel_ms}, {"host_ms_per_step", mr.host_ms},
                    {"comm_ms_per_step", mr.comm_ms},     {"comm_bytes_per_step", mr.comm_bytes}};
    if (row.modes.size() == 2 && row.modes[0].host_ms > 0)
      d["host_time_removed"] = 1.0 - row.modes[1].host_ms / row.modes[0].host_ms;
    decode.push_back(std::move(d));
  }
  std::string mode;
  for (const DecodeMode& dm : modes) mode += (mode.empty() ? "" : "+") + dm.name;
  json report = {{"model", o.model},
                 {"architecture", c.architecture},
                 {"layers", c.num_hidden_layers},
                 {"vendor", o.vendor},
                 {"precision", matmul_precision_name(m.device.matmul_precision)},
                 {"threads", threads},
                 {"mode", mode},
                 {"requested_mode", o.graph   ? "graph"
                                    : o.eager ? "eager"
                                              : "eager+graph"},
                 {"depth", o.depth},
                 {"gen", o.gen},
                 {"reps", o.reps},
                 {"load_s", m.load_seconds},
                 {"weight_placement", m.weight_placement},
                 {"weight_bytes", m.weights->total_bytes()},
                 {"peak_rss_bytes", rss},
                 {"state_bytes_per_sequence", KvCache::state_bytes_per_sequence(c)},
                 {"bandwidth_gbs", bw_gbs},
                 {"bandwidth_share_formula", kFormula},
                 {"host_ms_formula", kHostFormula},
                 {"prefill", prefill},
                 {"decode", decode}};
  if (o.json) {
    out << report.dump(2) << std::endl;
    return;
  }
  out << "model " << o.model << " (" << c.architecture << ", " << c.num_hidden_layers << " layers, "
      << fmt(static_cast<double>(m.weights->total_bytes()) / 1e9, 2) << " GB of weights), vendor " << o.vendor << ", "
      << matmul_precision_name(m.device.matmul_precision) << " matmuls, " << threads << " threads, " << mode << "\n"
      << "load " << fmt(m.load_seconds, 2) << " s, peak RSS " << fmt(static_cast<double>(rss) / 1e9, 2)
      << " GB, memory read bandwidth " << fmt(bw_gbs) << " GB/s (best pass over " << o.bandwidth_mib << " MiB)\n"
      << "weights " << m.weight_placement << "\n";
  if (const size_t st = KvCache::state_bytes_per_sequence(c); st > 0)
    out << "linear-attention state: " << fmt(static_cast<double>(st) / 1e6, 2) << " MB per sequence ("
        << c.num_linear_attention_layers() << " of " << c.num_hidden_layers << " layers)\n";
  out << "figures: median [min, max] over " << o.reps << " repetitions\n\n";
  out << std::left << std::setw(12) << "prompt_len"
      << "prefill tok/s\n";
  for (const auto& [len, s] : prefill_rows) out << std::setw(12) << len << fmt_stats(s) << "\n";
  out << "\ndecode at depth " << o.depth << ", " << o.gen << " steps\n"
      << std::setw(7) << "batch" << std::setw(7) << "mode" << std::setw(28) << "tok/s" << std::setw(28) << "ms/step"
      << std::setw(11) << "kernel ms" << std::setw(10) << "host ms" << std::setw(14) << "weights MB" << std::setw(11)
      << "bound ms"
      << "bw share\n";
  for (size_t i = 0; i < decode_rows.size(); ++i) {
    const auto& row = decode_rows[i];
    const auto& d = decode[i];
    for (const ModeRow& mr : row.modes) {
      const double bound_ms = d["bound_ms_per_step"].get<double>();
      out << std::setw(7) << row.batch << std::setw(7) << mr.mode << std::setw(28) << fmt_stats(mr.tok_s)
          << std::setw(28) << fmt_stats(mr.ms, 3) << std::setw(11) << fmt(mr.kernel_ms, 3) << std::setw(10)
          << fmt(mr.host_ms, 3) << std::setw(14) << fmt(d["weight_bytes_per_step"].get<double>() / 1e6) << std::setw(11)
          << fmt(bound_ms, 2) << fmt(100.0 * bound_ms / mr.ms.median) << "%\n";
    }
    if (d.contains("host_time_removed"))
      out << std::setw(7) << ""
          << "graph replay removes " << fmt(100.0 * d["host_time_removed"].get<double>())
          << "% of the eager step's host time\n";
  }
  out << "\n" << kHostFormula << "\n";
  out << "\n" << kFormula << "\n";
}

}  // namespace opchain::tools
