#pragma once
// The graph runner of vendors whose kernels run on the host (cpu, reference): capture records each
// top-level launch with a copy of its bound arguments (LaunchRecorder); replay calls them in order.
// See Note [Graph capture] in backends/graph_runner.h.
#include "backends/graph_runner.h"

namespace opchain {

class HostGraphRunner final : public GraphRunner {
 public:
  std::string name() const override { return "HostGraphRunner"; }
  std::unique_ptr<CapturedGraph> capture(const std::function<void()>& step) override;
};

}  // namespace opchain
