#include "tools/align.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "backends/visit_tensors.h"
#include "core/error.h"
#include "core/trace.h"
#include "engine/loaded_model.h"
#include "engine/model_runner.h"

namespace opchain::tools {

namespace {

float element_as_f32(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::I32:
      return static_cast<float>(t.data<int32_t>()[i]);
    case DType::I64:
      return static_cast<float>(t.data<int64_t>()[i]);
    case DType::U8:
      return static_cast<float>(t.data<uint8_t>()[i]);
    default:
      return load_as_f32(t.raw(), t.dtype(), static_cast<size_t>(i));
  }
}

struct TensorStats {
  double min = 0, max = 0, mean = 0, absmax = 0;
  int64_t non_finite = 0;
};

TensorStats stats_of(const Tensor& t) {
  TensorStats s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = element_as_f32(t, i);
    if (!std::isfinite(v)) {
      ++s.non_finite;
      continue;
    }
    ++finite;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    s.absmax = std::max(s.absmax, std::fabs(v));
    sum += v;
  }
  if (finite == 0) s.min = s.max = 0;
  s.mean = finite ? sum / static_cast<double>(finite) : 0;
  return s;
}

std::string sci(double v) {
  std::ostringstream o;
  o << std::scientific << std::setprecision(3) << v;
  return o.str();
}

std::string describe(const TensorStats& s) {
  std::string out = "min " + sci(s.min) + " max " + sci(s.max) + " mean " + sci(s.mean) + " absmax " + sci(s.absmax);
  if (s.non_finite) out += " non-finite " + std::to_string(s.non_finite);
  return out;
}

// One top-level op call as an observer saw it: its kernel, its inputs summarised before it ran and
// its outputs copied (as f32) after.
struct OpCall {
  const KernelEntry* entry = nullptr;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, "dtype[shape] stats"
  struct Output {
    std::string name;
    Shape shape;
    std::vector<float> values;
  };
  std::vector<Output> outputs;
};

class CallRecorder final : public LaunchObserver {
 public:
  void before_launch(const KernelEntry& e, const void* args) override {
    OpCall call;
    call.entry = &e;
    visit_tensors(e.op, args, [&](const char* name, const Tensor& t, bool is_output) {
      if (!is_output) call.inputs.emplace_back(name, t.desc() + "  " + describe(stats_of(t)));
    });
    calls.push_back(std::move(call));
  }
  void after_launch(const KernelEntry& e, const void* args) override {
    OpCall& call = calls.back();
    visit_tensors(e.op, args, [&](const char* name, const Tensor& t, bool is_output) {
      if (!is_output) return;
      OpCall::Output out{name, t.shape(), std::vector<float>(static_cast<size_t>(t.numel()))};
      for (int64_t i = 0; i < t.numel(); ++i) out.values[static_cast<size_t>(i)] = element_as_f32(t, i);
      call.outputs.push_back(std::move(out));
    });
  }
  std::vector<OpCall> calls;
};

// Makes an observer and a tracer active for one step, and clears them again on the way out.
class Observing {
 public:
  Observing(LaunchObserver* obs, Tracer* tracer) {
    LaunchObserver::set_active(obs);
    Tracer::set_active(tracer);
  }
  ~Observing() {
    LaunchObserver::set_active(nullptr);
    Tracer::set_active(nullptr);
  }
  Observing(const Observing&) = delete;
  Observing& operator=(const Observing&) = delete;
};

struct Diff {
  double max_abs = 0, rel = 0, err = 0;  // rel: max_abs / absmax(oracle); err: max |a-b| / (1 + |b|)
  std::string worst_output, shape_mismatch;
};

Diff diff_of(const OpCall& a, const OpCall& b) {
  Diff d;
  if (a.outputs.size() != b.outputs.size()) {
    d.shape_mismatch = std::to_string(a.outputs.size()) + " outputs vs " + std::to_string(b.outputs.size());
    return d;
  }
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    const auto& x = a.outputs[o];
    const auto& y = b.outputs[o];
    if (!(x.shape == y.shape)) {
      d.shape_mismatch = x.name + " " + x.shape.str() + " vs " + y.shape.str();
      return d;
    }
    double max_abs = 0, absmax = 0, err = 0;
    for (size_t i = 0; i < x.values.size(); ++i) {
      const double u = x.values[i], v = y.values[i];
      const double diff = u == v                 ? 0.0
                          : std::isfinite(u - v) ? std::fabs(u - v)
                                                 : std::numeric_limits<double>::infinity();
      max_abs = std::max(max_abs, diff);
      absmax = std::max(absmax, std::fabs(v));
      err = std::max(err, diff / (1.0 + std::fabs(v)));
    }
    if (err >= d.err) {
      d.err = err;
      d.max_abs = max_abs;
      d.rel = absmax > 0 ? max_abs / absmax : max_abs;
      d.worst_output = x.name;
    }
  }
  return d;
}

std::string chain_of(const TraceEvent& e) {
  return e.module_path + " -> " + e.nn_module + " -> " + e.op_type + " -> " + e.impl + " -> " + e.key + " -> " +
         e.vendor + ":" + e.kernel;
}

std::vector<const TraceEvent*> top_level(const Tracer& t) {
  std::vector<const TraceEvent*> out;
  for (const auto& e : t.events())
    if (e.depth == 0) out.push_back(&e);
  return out;
}

// One way of running the steps: a model on a vendor with its own cache, eager or graph mode.
struct Side {
  std::string name;  // "graph", "eager", or a vendor
  bool graph = false;
  LoadedModel m;
  std::unique_ptr<KvCache> cache;
  std::vector<int32_t> blocks;
  int32_t slot = -1;  // hybrid models' state slot
  std::unique_ptr<ModelRunner> runner;

  Side(const AlignOptions& o, std::string side_name, const std::string& vendor, bool graph_mode, int64_t total_tokens)
      : name(std::move(side_name)), graph(graph_mode), m(load_model(o.model, vendor, {}, o.precision)) {
    cache = std::make_unique<KvCache>(m.model->cache_config(), 1 + (total_tokens + o.block_size - 1) / o.block_size,
                                      o.block_size);
    cache->allocator().allocate(cache->blocks_for(total_tokens), blocks);
    slot = cache->state_slots().allocate();
    runner = std::make_unique<ModelRunner>(*m.model, m.device, *cache);
    if (graph && !runner->enable_graph_mode(1))
      throw InvalidArgumentError("--compare graph:eager: " + o.model +
                                 " cannot run in graph mode: " + runner->graph_off_reason());
  }
};

// Prints where the two sides parted: the step, the op call, its five-layer chain on each side and
// the statistics of each side's inputs just before the call.
void report_mismatch(std::ostream& out, const std::string& step_name, size_t index, int64_t overall,
                     const std::string& problem, const Side& a, const OpCall& ca,
                     const std::vector<const TraceEvent*>& events_a, const Side& b, const OpCall& cb,
                     const TraceEvent& eb) {
  out << "\nfirst op over tolerance: " << step_name << ", op call " << index + 1 << " of the step (" << overall
      << " overall): " << problem << "\n";
  out << "five-layer chain (module path -> nn module -> OpType -> backend impl -> registry key -> vendor kernel):\n";
  out << "  " << b.name << ": " << chain_of(eb) << "\n";
  if (index < events_a.size())
    out << "  " << a.name << ": " << chain_of(*events_a[index]) << "\n";
  else  // a replayed graph runs the kernels without the modules; the call site is the eager one's
    out << "  " << a.name << ": " << eb.module_path << " -> " << eb.nn_module << " -> " << eb.op_type
        << " -> (replayed from the captured graph) -> " << op_key(ca.entry->op) << " -> " << ca.entry->vendor << ":"
        << ca.entry->kernel_name << "\n";
  if (!eb.metadata.empty()) out << "  step metadata (" << b.name << "): " << eb.metadata << "\n";
  out << "inputs before the call:\n";
  for (const auto& [side, call] : {std::pair{&a, &ca}, std::pair{&b, &cb}}) {
    out << "  " << side->name << ":\n";
    for (const auto& [name, desc] : call->inputs) out << "    " << std::left << std::setw(20) << name << desc << "\n";
  }
}

}  // namespace

bool run_align(const AlignOptions& o, std::ostream& out) {
  if (o.prompt.empty()) throw InvalidArgumentError("give --ids or --ids-file");
  if (o.decode_steps < 0) throw InvalidArgumentError("--decode-steps must not be negative");
  if (o.tol && !(*o.tol >= 0)) throw InvalidArgumentError("--tol must be a number >= 0");
  const auto colon = o.compare.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == o.compare.size())
    throw InvalidArgumentError("--compare takes A:B, e.g. graph:eager or cpu:reference; got '" + o.compare + "'");
  const std::string name_a = o.compare.substr(0, colon), name_b = o.compare.substr(colon + 1);
  const bool graph_mode = name_a == "graph" || name_b == "graph" || name_a == "eager" || name_b == "eager";
  if (graph_mode && !(name_a == "graph" && name_b == "eager"))
    throw InvalidArgumentError("--compare: graph mode is compared against its oracle as graph:eager; got '" +
                               o.compare + "'");

  std::vector<int32_t> tokens = o.prompt;
  const int64_t total = static_cast<int64_t>(tokens.size()) + o.decode_steps;
  Side a(o, name_a, graph_mode ? o.vendor : name_a, graph_mode, total);
  Side b(o, name_b, graph_mode ? o.vendor : name_b, false, total);
  const int64_t vocab = b.m.config.vocab_size;
  // In bf16 precision a matmul rounds its input activations to 8 bits of mantissa, so an upstream
  // difference of one f32 rounding can move an input by one bf16 ulp (2^-8 = 3.9e-3 relative), and the
  // next layers carry such flips on (a hybrid model's gated RMSNorm magnifies tiny delta-rule outputs):
  // two vendors differ by 1e-2 after a few layers. The default tolerance follows the precision (Note
  // [Matmul precision]); a real defect (a wrong eps, a dropped gate) moves outputs by 0.1 and more.
  const double tol = o.tol ? *o.tol : b.m.device.matmul_precision == MatmulPrecision::Bf16 ? 3e-2 : 1e-3;
  out << "align " << o.model << " (" << b.m.config.architecture << "): " << name_a << " against " << name_b
      << (graph_mode ? " on vendor " + o.vendor : std::string()) << ", prefill of " << tokens.size() << " tokens + "
      << o.decode_steps << " decode steps; tol " << tol << " on err = max |a-b| / (1 + |b|)\n";
  out << std::left << std::setw(6) << "step" << std::setw(6) << "call" << std::setw(24) << "op" << std::setw(40)
      << "module path" << std::setw(12) << "max |diff|" << std::setw(12) << "rel"
      << "err\n";

  int64_t overall = 0;
  for (int step = 0; step <= o.decode_steps; ++step) {
    const bool prefill = step == 0;
    const size_t first = prefill ? 0 : tokens.size() - 1;
    const std::span<const int32_t> new_tokens(tokens.data() + first, tokens.size() - first);
    const int64_t past = static_cast<int64_t>(first);
    CallRecorder rec_a, rec_b;
    Tracer trace_a, trace_b;
    {
      Observing on(&rec_a, &trace_a);
      SequenceStep s{new_tokens, past, a.blocks, false, a.slot};
      a.runner->forward({&s, 1});
    }
    Tensor logits_b;
    {
      Observing on(&rec_b, &trace_b);
      SequenceStep s{new_tokens, past, b.blocks, false, b.slot};
      logits_b = b.runner->forward({&s, 1});
    }
    const std::string step_name = prefill ? "prefill" : "decode step " + std::to_string(step);
    if (a.graph && !prefill && !a.runner->last_step_replayed())
      throw Error("align: the graph side did not replay " + step_name);
    const auto events_a = top_level(trace_a), events_b = top_level(trace_b);
    if (events_b.size() != rec_b.calls.size() || rec_b.calls.empty())
      throw Error("align: " + name_b + " traced " + std::to_string(events_b.size()) + " op calls but observed " +
                  std::to_string(rec_b.calls.size()));
    const size_t n = std::min(rec_a.calls.size(), rec_b.calls.size());
    for (size_t i = 0; i < n; ++i) {
      const OpCall &ca = rec_a.calls[i], &cb = rec_b.calls[i];
      const TraceEvent& eb = *events_b[i];
      std::string problem;
      Diff d;
      if (ca.entry->op != cb.entry->op) {
        problem = "different ops: " + std::string(op_key(ca.entry->op)) + " vs " + std::string(op_key(cb.entry->op));
      } else {
        d = diff_of(ca, cb);
        if (!d.shape_mismatch.empty())
          problem = "outputs differ in shape: " + d.shape_mismatch;
        else if (!(d.err <= tol))
          problem = "output '" + d.worst_output + "' err " + sci(d.err) + " > tol " + sci(tol);
      }
      ++overall;
      out << std::setw(6) << (prefill ? "P" : std::to_string(step)) << std::setw(6) << overall << std::setw(24)
          << eb.key << std::setw(40) << eb.module_path << std::setw(12) << sci(d.max_abs) << std::setw(12) << sci(d.rel)
          << sci(d.err) << (problem.empty() ? "" : "  <-- first over tolerance") << "\n";
      if (!problem.empty()) {
        report_mismatch(out, step_name, i, overall, problem, a, ca, events_a, b, cb, eb);
        return false;
      }
    }
    if (rec_a.calls.size() != rec_b.calls.size()) {
      out << "\n"
          << step_name << ": " << name_a << " made " << rec_a.calls.size() << " op calls, " << name_b << " "
          << rec_b.calls.size() << "; the first " << n << " agree\n";
      return false;
    }
    tokens.push_back(static_cast<int32_t>(std::max_element(logits_b.data<float>(), logits_b.data<float>() + vocab) -
                                          logits_b.data<float>()));
  }
  out << "\nall " << overall << " op calls within tolerance " << tol << "\n";
  return true;
}

}  // namespace opchain::tools
