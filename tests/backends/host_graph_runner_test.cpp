// HostGraphRunner: capture records the top-level launches of a step with their bound arguments;
// replay runs those and nothing else (no host code of the step, no nested launch recorded twice),
// observers see the same launches eager and replayed, and a kernel that is not capture-safe makes
// capture fail with its name.
#include "backends/host_graph_runner.h"

#include <gtest/gtest.h>

#include "backends/ops_backend.h"
#include "backends/visit_tensors.h"
#include "vendors/builtin_vendors.h"

namespace opchain {
namespace {

struct Counts {
  int outer = 0, inner = 0, plain = 0, unsafe = 0;
} g_counts;

Kernel<OpType::SiluAndMul> g_inner;  // what the "fused" outer kernel launches itself

void inner_kernel(const SiluAndMulArgs& a) {
  ++g_counts.inner;
  a.out.data<float>()[0] += 1.0f;
}
void outer_kernel(const SwigluArgs& a) {
  ++g_counts.outer;
  launch(g_inner, SiluAndMulArgs{a.x, a.out}, nullptr, [](std::string&, std::string&) {});
}
void plain_kernel(const RmsNormArgs& a) {
  ++g_counts.plain;
  a.out.data<float>()[0] += a.x.data<float>()[0];
}
void unsafe_kernel(const AddRmsNormArgs&) { ++g_counts.unsafe; }

const Registry& test_registry() {
  static const Registry reg = [] {
    Registry r;
    r.add<OpType::SiluAndMul>("graph-test", DType::F32, inner_kernel, "test::inner");
    r.add<OpType::Swiglu>("graph-test", DType::F32, outer_kernel, "test::outer");
    r.add<OpType::RmsNorm>("graph-test", DType::F32, plain_kernel, "test::plain");
    r.add<OpType::AddRmsNorm>("graph-test", DType::F32, unsafe_kernel, "test::unsafe_add_rms_norm", KernelFlags{false});
    return r;
  }();
  return reg;
}

auto no_trace = [](std::string&, std::string&) {};

struct Step {
  Tensor x = Tensor::empty(DType::F32, {1, 2});
  Tensor out = Tensor::empty(DType::F32, {1, 2});
  Kernel<OpType::Swiglu> outer = resolve_kernel<OpType::Swiglu>(test_registry(), "graph-test", DType::F32);
  Kernel<OpType::RmsNorm> plain = resolve_kernel<OpType::RmsNorm>(test_registry(), "graph-test", DType::F32);
  int host_work = 0;
  Step() {
    g_inner = resolve_kernel<OpType::SiluAndMul>(test_registry(), "graph-test", DType::F32);
    x.data<float>()[0] = 10.0f;
  }
  void run() {
    ++host_work;  // host code of the step: a replay must not run it
    launch(outer, SwigluArgs{x, out}, nullptr, no_trace);
    launch(plain, RmsNormArgs{x, Tensor(), out, 1e-6f}, nullptr, no_trace);
  }
};

struct Seen : LaunchObserver {
  std::vector<std::string> before, after, outputs;
  void before_launch(const KernelEntry& e, const void*) override { before.push_back(e.kernel_name); }
  void after_launch(const KernelEntry& e, const void* args) override {
    after.push_back(e.kernel_name);
    visit_tensors(e.op, args, [&](const char* name, const Tensor&, bool is_output) {
      if (is_output) outputs.push_back(name);
    });
  }
};

TEST(HostGraphRunner, ReplayRunsTheRecordedLaunchesAndNothingElse) {
  g_counts = {};
  Step step;
  HostGraphRunner runner;
  auto graph = runner.capture([&] { step.run(); });
  EXPECT_EQ(graph->kernels(), (std::vector<std::string>{"test::outer", "test::plain"}));  // not test::inner
  EXPECT_EQ(step.host_work, 1);
  EXPECT_EQ(g_counts.outer, 1);  // capture runs the step once
  EXPECT_EQ(step.out.data<float>()[0], 11.0f);

  step.x.data<float>()[0] = 100.0f;  // buffers are bound by address: the replay reads the new value
  graph->replay();
  EXPECT_EQ(step.host_work, 1);
  EXPECT_EQ(g_counts.outer, 2);
  EXPECT_EQ(g_counts.inner, 2);
  EXPECT_EQ(g_counts.plain, 2);
  EXPECT_EQ(step.out.data<float>()[0], 11.0f + 1.0f + 100.0f);
  EXPECT_EQ(LaunchRecorder::active(), nullptr);
}

TEST(HostGraphRunner, ObserversSeeTheSameLaunchesEagerAndReplayed) {
  Step step;
  HostGraphRunner runner;
  auto graph = runner.capture([&] { step.run(); });
  Seen eager, replayed;
  LaunchObserver::set_active(&eager);
  step.run();
  LaunchObserver::set_active(&replayed);
  graph->replay();
  LaunchObserver::set_active(nullptr);
  const std::vector<std::string> want{"test::outer", "test::plain"};
  EXPECT_EQ(eager.before, want);
  EXPECT_EQ(eager.after, want);
  EXPECT_EQ(replayed.before, want);
  EXPECT_EQ(replayed.after, want);
  EXPECT_EQ(replayed.outputs, eager.outputs);
  EXPECT_EQ(eager.outputs, (std::vector<std::string>{"out", "out"}));
}

TEST(HostGraphRunner, KernelThatIsNotCaptureSafeFailsWithItsName) {
  g_counts = {};
  Step step;
  auto unsafe = resolve_kernel<OpType::AddRmsNorm>(test_registry(), "graph-test", DType::F32);
  HostGraphRunner runner;
  try {
    runner.capture([&] {
      step.run();
      launch(unsafe, AddRmsNormArgs{step.x, step.out, Tensor(), step.out, 1e-6f}, nullptr, no_trace);
    });
    FAIL() << "captured a kernel registered with capture_safe=false";
  } catch (const GraphCaptureError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test::unsafe_add_rms_norm"), std::string::npos) << what;
    EXPECT_NE(what.find("add_rms_norm"), std::string::npos) << what;
    EXPECT_NE(what.find("host_graph_runner_test.cpp"), std::string::npos) << what;  // where it was registered
    EXPECT_NE(what.find("launch 2"), std::string::npos) << what;
  }
  EXPECT_EQ(g_counts.unsafe, 0);  // refused before it ran
  EXPECT_EQ(LaunchRecorder::active(), nullptr);
  EXPECT_EQ(detail::launch_depth(), 0);
}

TEST(HostGraphRunner, StepWithoutLaunchesIsAnError) {
  HostGraphRunner runner;
  EXPECT_THROW(runner.capture([] {}), GraphCaptureError);
}

TEST(HostGraphRunner, IsTheDefaultOfHostVendors) {
  DeviceContext dev;
  dev.vendor = "cpu";
  dev.registry = &builtin_registry();
  EXPECT_EQ(select_backend(dev).make_graph_runner()->name(), "HostGraphRunner");
}

}  // namespace
}  // namespace opchain
