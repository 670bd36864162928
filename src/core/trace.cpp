#include "core/trace.h"

namespace opchain {

namespace {
Tracer* g_active = nullptr;
}

Tracer::Tracer() : origin_(std::chrono::steady_clock::now()) {}
Tracer* Tracer::active() { return g_active; }
void Tracer::set_active(Tracer* t) { g_active = t; }

size_t Tracer::begin(TraceEvent e) {
  if (!open_.empty() && e.module_path.empty()) {
    // A sub-kernel launched by a vendor kernel has no call site of its own: it belongs to the
    // module of the launch that contains it, reached through that launch's vendor kernel.
    const TraceEvent& parent = events_[open_.back()];
    e.module_path = parent.module_path;
    e.nn_module = parent.nn_module;
    e.impl = parent.kernel;
  }
  e.depth = depth_++;
  e.start_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  events_.push_back(std::move(e));
  open_.push_back(events_.size() - 1);
  return events_.size() - 1;
}

void Tracer::end(size_t index) {
  --depth_;
  if (!open_.empty()) open_.pop_back();
  const double now = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  events_[index].dur_us = now - events_[index].start_us;
}

nlohmann::json chrome_trace_events(const std::vector<TraceEvent>& events, int pid) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : events)
    out.push_back({{"name", e.key},
                   {"cat", e.vendor},
                   {"ph", "X"},
                   {"ts", e.start_us},
                   {"dur", e.dur_us},
                   {"pid", pid},
                   {"tid", 1},
                   {"args",
                    {{"module_path", e.module_path},
                     {"nn_module", e.nn_module},
                     {"op_type", e.op_type},
                     {"impl", e.impl},
                     {"kernel", e.kernel},
                     {"metadata", e.metadata},
                     {"tensors", e.tensors}}}});
  return out;
}

}  // namespace opchain
