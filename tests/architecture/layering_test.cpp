// The five layers hold only if nothing skips one: models include no backends/ops/vendors headers,
// nn includes no vendor or io headers and names no concrete impl (it asks the backend, Note [Impl
// builders]), backends include no vendor headers (the engine hands them a registry), ops contain no
// vendor headers either. And every op of the table has its files in each layer that must have one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "ops/op_table.h"
#include "test_paths.h"

namespace opchain {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> violations(const std::string& folder, const std::regex& forbidden) {
  std::vector<std::string> out;
  const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() + "/src/" + folder)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    int no = 0;
    while (std::getline(in, line)) {
      ++no;
      std::smatch m;
      if (std::regex_search(line, m, include) && std::regex_search(m[1].str(), forbidden))
        out.push_back(entry.path().string() + ":" + std::to_string(no) + ": " + line);
    }
  }
  return out;
}

// Lines of the files under src/<folder> that match `pattern` anywhere.
std::vector<std::string> mentions(const std::string& folder, const std::regex& pattern) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(test::source_dir() + "/src/" + folder)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    int no = 0;
    while (std::getline(in, line)) {
      ++no;
      if (std::regex_search(line, pattern))
        out.push_back(entry.path().string() + ":" + std::to_string(no) + ": " + line);
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(Layering, ModelsIncludeNoBackendsOpsOrVendors) {
  const auto bad = violations("models", std::regex("^(backends|ops|vendors)/"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(Layering, NnIncludesNoVendorsIoOrModels) {
  const auto bad = violations("nn", std::regex("^(vendors|io|models|engine)/"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

// nn reaches layer 3 through the impl interfaces and the backend only, never a concrete impl's header.
const std::regex kNnForbiddenBackends("^backends/(?!(op_impl|ops_backend|step_context)\\.h$)");
TEST(Layering, NnIncludesOnlyTheBackendInterfaces) {
  const auto bad = violations("nn", kNnForbiddenBackends);
  EXPECT_TRUE(bad.empty()) << join(bad);
}

// Note [Impl builders]: an nn module asks the backend for OpImpl<X>; naming or constructing an impl
// class itself would bypass a vendor's impl.
TEST(Layering, NnNamesNoConcreteImpl) {
  const auto bad = mentions("nn", std::regex("KernelImpl<|build_kernel_impl|Default\\w*Impl|make_unique<\\w*Impl>"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(Layering, BackendsIncludeNoVendorsNnOrModels) {
  const auto bad = violations("backends", std::regex("^(vendors|nn|models|engine|io)/"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(Layering, OpsIncludeNoVendorsBackendsOrModels) {
  const auto bad = violations("ops", std::regex("^(vendors|backends|nn|models)/"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(Layering, VendorsKnowNothingAboutModels) {
  const auto bad = violations("vendors", std::regex("^(models|nn|engine)/"));
  EXPECT_TRUE(bad.empty()) << join(bad);
}

// Note [Communicator]: src/dist/ is the MPI world behind the Communicator interface. It builds on
// core and that one interface; the layers that run a model see only Communicator, never the world.
const std::regex kDistForbidden("^(?!(core/|dist/|backends/communicator\\.h$))[^/]+/");
TEST(Layering, DistIncludesOnlyCoreAndTheCommunicator) {
  const auto bad = violations("dist", kDistForbidden);
  EXPECT_TRUE(bad.empty()) << join(bad);
}

TEST(Layering, NoModelLayerIncludesDist) {
  for (const char* folder : {"models", "nn", "vendors", "ops"}) {
    const auto bad = violations(folder, std::regex("^dist/"));
    EXPECT_TRUE(bad.empty()) << join(bad);
  }
}

TEST(Layering, TheCheckSeesAViolation) {
  // Guard against a scanner that can never fail: a crafted file under a temp tree is caught.
  const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::smatch m;
  const std::string line = "#include \"vendors/cpu/cpu_kernels.h\"";
  ASSERT_TRUE(std::regex_search(line, m, include));
  EXPECT_TRUE(std::regex_search(m[1].str(), std::regex("^(backends|ops|vendors)/")));
  // The allow-list of nn's backend headers: an impl's header is caught, the interfaces are not.
  EXPECT_TRUE(std::regex_search(std::string("backends/attention.h"), kNnForbiddenBackends));
  EXPECT_FALSE(std::regex_search(std::string("backends/op_impl.h"), kNnForbiddenBackends));
  EXPECT_FALSE(std::regex_search(std::string("backends/step_context.h"), kNnForbiddenBackends));
  EXPECT_TRUE(std::regex_search(std::string("backends/attention.h"), kDistForbidden));
  EXPECT_TRUE(std::regex_search(std::string("engine/engine.h"), kDistForbidden));
  EXPECT_FALSE(std::regex_search(std::string("backends/communicator.h"), kDistForbidden));
  EXPECT_FALSE(std::regex_search(std::string("core/error.h"), kDistForbidden));
  EXPECT_FALSE(std::regex_search(std::string("mpi.h"), kDistForbidden));
}

// docs/adding-an-op.md: an op touches its table row, its Args header, its kernels (a reference one
// at least) and the harness cases (tests/vendors/kernel_harness_test.cpp fails on an op without any).
TEST(Layering, EveryOpOfTheTableHasItsFiles) {
  for (const auto& info : kOpTable) {
    const std::string key(info.key);
    EXPECT_TRUE(fs::exists(test::source_dir() + "/src/ops/" + key + ".h"))
        << key << ": no Args header src/ops/" << key << ".h";
    EXPECT_TRUE(fs::exists(test::source_dir() + "/src/vendors/reference/" + key + ".cpp"))
        << key << ": no reference kernel src/vendors/reference/" << key << ".cpp";
  }
}

TEST(Layering, EveryOpHasAReferenceKernelFile) {
  for (const auto& entry : fs::directory_iterator(test::source_dir() + "/src/ops")) {
    const std::string name = entry.path().stem().string();
    if (entry.path().extension() != ".h" || name == "registry" || name == "op_table" || name == "step_metadata" ||
        name == "matmul_precision" || name == "expert_weights" || name == "field" || name == "op_fields" ||
        name == "abi_marshal")
      continue;
    EXPECT_TRUE(fs::exists(test::source_dir() + "/src/vendors/reference/" + name + ".cpp")) << name;
  }
}

}  // namespace
}  // namespace opchain
