#include "backends/host_graph_runner.h"

#include "backends/ops_backend.h"

namespace opchain {

namespace {

class HostGraph final : public CapturedGraph {
 public:
  explicit HostGraph(std::vector<BoundLaunch> launches) : launches_(std::move(launches)) {}

  void replay() const override {
    // A replayed kernel is a top-level launch: the launches it makes itself must nest under it, as
    // they do in launch(), so that recorders and observers see the same calls either way.
    if (LaunchObserver* obs = LaunchObserver::active()) {
      for (const BoundLaunch& l : launches_) {
        if (l.is_host_step()) {  // observers watch kernels; a host step has no entry to show them
          detail::InsideKernel inside;
          l.run();
          continue;
        }
        obs->before_launch(*l.entry, l.args.get());
        {
          detail::InsideKernel inside;
          l.run();
        }
        obs->after_launch(*l.entry, l.args.get());
      }
      return;
    }
    detail::InsideKernel inside;
    for (const BoundLaunch& l : launches_) l.run();
  }

  std::vector<std::string> kernels() const override {
    std::vector<std::string> out;
    out.reserve(launches_.size());
    for (const BoundLaunch& l : launches_) out.push_back(l.name());
    return out;
  }

 private:
  std::vector<BoundLaunch> launches_;
};

class Recorder final : public LaunchRecorder {
 public:
  void record(BoundLaunch launch) override {
    if (launch.is_host_step()) {  // safe by contract (Note [Host steps])
      launches.push_back(std::move(launch));
      return;
    }
    const KernelEntry& e = *launch.entry;
    if (!e.flags.capture_safe)
      throw GraphCaptureError(
          "cannot capture a graph: kernel '" + e.kernel_name + "' (op " + std::string(op_key(e.op)) + ", " +
          std::string(dtype_name(e.dtype)) + ", vendor '" + e.vendor + "', registered at " + e.where.file_name() + ":" +
          std::to_string(e.where.line()) + ") is not capture-safe; launch " + std::to_string(launches.size()) +
          " of the step. Run with --eager, or make the kernel capture-safe (Note [Graph capture])");
    launches.push_back(std::move(launch));
  }
  std::vector<BoundLaunch> launches;
};

// Makes `r` the active recorder for its lifetime and restores the previous one, also on a throw.
class ActiveRecorder {
 public:
  explicit ActiveRecorder(LaunchRecorder* r) : saved_(LaunchRecorder::active()) { LaunchRecorder::set_active(r); }
  ~ActiveRecorder() { LaunchRecorder::set_active(saved_); }
  ActiveRecorder(const ActiveRecorder&) = delete;
  ActiveRecorder& operator=(const ActiveRecorder&) = delete;

 private:
  LaunchRecorder* saved_;
};

}  // namespace

std::unique_ptr<CapturedGraph> HostGraphRunner::capture(const std::function<void()>& step) {
  if (detail::launch_depth() != 0) throw GraphCaptureError("cannot capture a graph from inside a kernel launch");
  Recorder rec;
  {
    ActiveRecorder active(&rec);
    step();
  }
  if (rec.launches.empty()) throw GraphCaptureError("cannot capture a graph: the step launched no kernel");
  return std::make_unique<HostGraph>(std::move(rec.launches));
}

// Host vendors share the host runner; a device vendor's backend overrides this.
std::unique_ptr<GraphRunner> OpsBackend::make_graph_runner() const { return std::make_unique<HostGraphRunner>(); }

}  // namespace opchain
