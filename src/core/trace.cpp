#include "core/trace.h"

namespace opchain {

namespace {
Tracer* g_active = nullptr;
}

Tracer::Tracer() : origin_(std::chrono::steady_clock::now()) {}
Tracer* Tracer::active() { return g_active; }
void Tracer::set_active(Tracer* t) { g_active = t; }

size_t Tracer::begin(TraceEvent e) {
  e.depth = depth_++;
  e.start_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  events_.push_back(std::move(e));
  return events_.size() - 1;
}

void Tracer::end(size_t index) {
  --depth_;
  const double now = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  events_[index].dur_us = now - events_[index].start_us;
}

}  // namespace opchain
