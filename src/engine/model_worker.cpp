#include "engine/model_worker.h"

#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "backends/communicator.h"
#include "core/error.h"
#include "core/trace.h"

namespace opchain {

namespace {

enum Command : int64_t {
  Shutdown = 0,
  OpenRunner = 1,
  Forward = 2,
  EnableGraph = 3,
  CloseRunner = 4,
  TraceBegin = 5,
  TraceEnd = 6
};
constexpr int kHeaderWords = 3;  // command, runner, payload words

}  // namespace

void WorkerChannel::send(int64_t command, int64_t runner, const std::vector<int64_t>& payload) {
  int64_t header[kHeaderWords] = {command, runner, static_cast<int64_t>(payload.size())};
  world_.broadcast(header, sizeof(header), 0);
  if (!payload.empty())
    world_.broadcast(const_cast<int64_t*>(payload.data()), static_cast<int64_t>(payload.size() * sizeof(int64_t)), 0);
}

int64_t WorkerChannel::open_runner(const KvCache& cache) {
  const int64_t id = next_runner_++;
  send(OpenRunner, id,
       {reinterpret_cast<int64_t>(&cache), cache.num_blocks(), cache.block_size(),
        cache.has_state() ? cache.state_slots().num_total() : 1, static_cast<int64_t>(cache.kv_dtype())});
  return id;
}

void WorkerChannel::forward(int64_t runner, std::span<const SequenceStep> seqs) {
  // [batch, per sequence (tokens, past_len, blocks, all_logits, state_slot, decoded_from), then the tokens and block
  // tables of every sequence in order]
  std::vector<int64_t> p;
  p.push_back(static_cast<int64_t>(seqs.size()));
  for (const SequenceStep& s : seqs) {
    p.push_back(static_cast<int64_t>(s.tokens.size()));
    p.push_back(s.past_len);
    p.push_back(static_cast<int64_t>(s.block_table.size()));
    p.push_back(s.all_logits ? 1 : 0);
    p.push_back(s.state_slot);
    p.push_back(s.decoded_from);
  }
  for (const SequenceStep& s : seqs) {
    p.insert(p.end(), s.tokens.begin(), s.tokens.end());
    p.insert(p.end(), s.block_table.begin(), s.block_table.end());
  }
  send(Forward, runner, p);
}

void WorkerChannel::enable_graph(int64_t runner, int64_t max_batch) { send(EnableGraph, runner, {max_batch}); }
void WorkerChannel::close_runner(int64_t runner) { send(CloseRunner, runner, {}); }
void WorkerChannel::shutdown() { send(Shutdown, 0, {}); }
void WorkerChannel::trace_begin() { send(TraceBegin, 0, {}); }

void WorkerChannel::trace_end(const std::string& path) {
  send(TraceEnd, 0, std::vector<int64_t>(path.begin(), path.end()));
  world_.barrier();
}

namespace {

WorkerChannel* channel_of(Communicator* world) {
  if (!world || world->size() == 1 || world->rank() != 0) return nullptr;
  // One channel per world: every runner of the driver numbers its commands through it.
  static std::mutex mu;
  static std::map<Communicator*, std::unique_ptr<WorkerChannel>> channels;
  std::lock_guard lock(mu);
  auto& c = channels[world];
  if (!c) c = std::make_unique<WorkerChannel>(*world);
  return c.get();
}

}  // namespace

WorkerChannel* worker_channel(const DeviceContext& device) { return channel_of(device.placement.world); }

void shutdown_workers(Communicator& world) {
  if (WorkerChannel* c = channel_of(&world)) c->shutdown();
}

void run_model_worker(const CausalLM& model, const DeviceContext& device) {
  Communicator* world = device.placement.world;
  if (!world || world->rank() == 0)
    throw InvalidArgumentError("run_model_worker runs on a worker rank (rank > 0 of an mpirun world)");
  std::map<int64_t, std::unique_ptr<KvCache>> caches;  // by the driver's cache id
  std::map<int64_t, std::unique_ptr<ModelRunner>> runners;
  const double step_timeout = world->timeout_seconds();
  std::vector<int64_t> payload;
  std::vector<int32_t> tokens, tables;
  std::vector<SequenceStep> seqs;
  std::unique_ptr<Tracer> tracer;
  struct Untrace {
    ~Untrace() { Tracer::set_active(nullptr); }
  } untrace;
  for (;;) {
    int64_t header[kHeaderWords] = {};
    world->set_timeout_seconds(0);  // idle until the driver's next command
    world->broadcast(header, sizeof(header), 0);
    world->set_timeout_seconds(step_timeout);
    payload.resize(static_cast<size_t>(header[2]));
    if (header[2] > 0) world->broadcast(payload.data(), header[2] * static_cast<int64_t>(sizeof(int64_t)), 0);
    const int64_t id = header[1];
    switch (header[0]) {
      case Shutdown:
        return;
      case OpenRunner: {
        auto& cache = caches[payload[0]];
        if (!cache)
          cache = std::make_unique<KvCache>(model.cache_config(), payload[1], payload[2], payload[3],
                                            static_cast<DType>(payload[4]));
        runners[id] = std::make_unique<ModelRunner>(model, device, *cache);
        break;
      }
      case Forward: {
        ModelRunner& runner = *runners.at(id);
        const int64_t batch = payload[0];
        int64_t at = 1 + 6 * batch, total_tokens = 0, total_blocks = 0;
        for (int64_t b = 0; b < batch; ++b) total_tokens += payload[1 + 6 * b], total_blocks += payload[3 + 6 * b];
        tokens.resize(static_cast<size_t>(total_tokens));
        tables.resize(static_cast<size_t>(total_blocks));
        seqs.assign(static_cast<size_t>(batch), SequenceStep{});
        int64_t tok = 0, blk = 0;
        for (int64_t b = 0; b < batch; ++b) {
          const int64_t* meta = payload.data() + 1 + 6 * b;
          const int64_t nt = meta[0], nb = meta[2];
          for (int64_t i = 0; i < nt; ++i) tokens[tok + i] = static_cast<int32_t>(payload[at++]);
          for (int64_t i = 0; i < nb; ++i) tables[blk + i] = static_cast<int32_t>(payload[at++]);
          SequenceStep& s = seqs[static_cast<size_t>(b)];
          s.tokens = std::span<const int32_t>(tokens.data() + tok, static_cast<size_t>(nt));
          s.block_table = std::span<const int32_t>(tables.data() + blk, static_cast<size_t>(nb));
          s.past_len = meta[1];
          s.all_logits = meta[3] != 0;
          s.state_slot = static_cast<int32_t>(meta[4]);
          s.decoded_from = meta[5];
          tok += nt;
          blk += nb;
        }
        runner.forward(seqs);
        break;
      }
      case EnableGraph:
        runners.at(id)->enable_graph_mode(payload[0]);
        break;
      case CloseRunner:
        runners.erase(id);
        break;
      case TraceBegin:
        tracer = std::make_unique<Tracer>();
        Tracer::set_active(tracer.get());
        break;
      case TraceEnd: {
        Tracer::set_active(nullptr);
        const std::string prefix(payload.begin(), payload.end());  // empty: the driver writes no Chrome trace
        if (!prefix.empty()) {
          const std::string path = prefix + ".rank" + std::to_string(world->rank()) + ".json";
          std::ofstream out(path);
          if (!out) throw InvalidArgumentError("rank " + std::to_string(world->rank()) + " cannot write " + path);
          out << chrome_trace_events(tracer ? tracer->events() : std::vector<TraceEvent>{}, world->rank()).dump()
              << "\n";
        }
        tracer.reset();
        world->barrier();
        break;
      }
      default:
        throw CommError("worker rank " + std::to_string(world->rank()) + " got an unknown command " +
                        std::to_string(header[0]) + " from the driver");
    }
  }
}

}  // namespace opchain
